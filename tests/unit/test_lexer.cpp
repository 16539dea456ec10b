// The scanner's lexer (lib/scan/lexer): tokens, comments kept aside,
// literals and disabled groups dropped, #defines collected, calls indexed.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../helpers/tokens.hpp"
#include "scan/lexer.hpp"

using namespace bekc;
using bekc::test::texts;

namespace {

std::string comments(const Lexed& l) {
    std::string out;
    // Appended piece by piece: `"[" + std::string(...)` made GCC 12 warn
    // (a false -Wstringop-overflow).
    for (const auto& c : l.comments) {
        out += '[';
        out += c.text;
        out += ']';
    }
    return out;
}

Lexed lex_all(std::string_view text) {
    return lex(text, /*all_tokens=*/true);
}

}  // namespace

TEST_CASE("lexer: identifiers, numbers, punctuators", "[lexer]") {
    Lexed l = lex_all("BE::Tensor x->y(1.5e-3f, 0x1Fu, 1'000) && a<<b >>c ## d");
    CHECK(texts(l.tokens) ==
          "BE :: Tensor x -> y ( 1.5e - 3f , 0x1Fu , 1'000 ) && a << b >> c ## d");
    CHECK(l.tokens[0].kind == LexKind::Ident);
    CHECK(l.tokens[7].kind == LexKind::Number);
    CHECK(l.tokens[1].kind == LexKind::Punct);
    CHECK(l.tokens[4].offset == 12);
}

TEST_CASE("lexer: literals are single tokens, comments are dropped", "[lexer]") {
    Lexed l = lex_all("f(\"a // b\", 'c', u8\"x\", L'y', R\"d(\n)\" \n)d\") /* g( */ h");
    CHECK(texts(l.tokens) == "f ( \"a // b\" , 'c' , u8\"x\" , L'y' , R\"d(\n)\" \n)d\" ) h");
    CHECK(l.tokens[2].kind == LexKind::String);
    CHECK(comments(l).empty());
    // An unterminated literal ends at the end of its line, as compilers recover.
    l = lex_all("a \"open\nb 'x\nc");
    CHECK(texts(l.tokens) == "a \"open b 'x c");
    // ... so a directive after it is still seen.
    CHECK(lex_all("#error don't\n#define M(x) x\n").macros.size() == 1);
    // A raw string without its `(` within 16 characters is an ordinary string.
    l = lex_all("R\"12345678901234567890(x)12345678901234567890\" y");
    CHECK(l.tokens.back().text() == "y");
}

TEST_CASE("lexer: // comments are kept with their text and offset", "[lexer]") {
    Lexed l = lex_all("int a; // one\n  //two\r\n/* // not */ x // three \\\n   continued\nz");
    CHECK(comments(l) == "[ one][two][ three \\\n   continued]");
    REQUIRE(l.comments.size() == 3);
    CHECK(l.comments[0].offset == 7);
    CHECK(texts(l.tokens) == "int a ; x z");
}

TEST_CASE("lexer: #if 0 groups are skipped up to #else, #elif or #endif", "[lexer]") {
    CHECK(texts(lex_all("a\n#if 0\nb\n#endif\nc").tokens) == "a c");
    CHECK(texts(lex_all("#if false\nb\n#else\nc\n#endif").tokens) == "c");
    CHECK(texts(lex_all("#if 0\nb\n#elif X\nc\n#else\nd\n#endif").tokens) == "c d");
    CHECK(texts(lex_all("#if 0\n#if 1\nb\n#else\nb2\n#endif\n#endif\nc").tokens) == "c");
    CHECK(texts(lex_all("#if 0\nb\n").tokens).empty());
    // Only a literal 0 or false disables.
    CHECK(texts(lex_all("#if 00\nb\n#endif\n#if 0 || 1\nc\n#endif").tokens) == "b c");
    // A splice in a disabled line does not end the group at the next line.
    CHECK(texts(lex_all("#if 0\nb \\\n#endif\nc\n#endif\nd").tokens) == "d");
}

TEST_CASE("lexer: function-like #defines are collected", "[lexer]") {
    Lexed l = lex_all(
        "#define OBJ (1)\n"
        "#define F(a, b) a##b(c) \\\n  more\n"
        "# define V(x, ...) x __VA_ARGS__ // note\n"
        "#define BAD(a\n");
    REQUIRE(l.macros.size() == 2);
    CHECK(l.macros[0].name == "F");
    CHECK(l.macros[0].params == std::vector<std::string_view>{"a", "b"});
    CHECK(texts(l.macros[0].body) == "a ## b ( c ) more");
    CHECK(l.macros[1].name == "V");
    CHECK(l.macros[1].params == std::vector<std::string_view>{"x", "__VA_ARGS__"});
    CHECK(texts(l.macros[1].body) == "x __VA_ARGS__");
    // Directives produce no code tokens, and their comments are not kept.
    CHECK(l.tokens.empty());
    CHECK(l.comments.empty());
    // `#` not at the start of a line is a token.
    CHECK(texts(lex_all("a # b").tokens) == "a # b");
}

TEST_CASE("lexer: calls are indexed with their closing bracket", "[lexer]") {
    Lexed l = lex_all("void f(int a[2], g(x)) { h (y); } k(");
    REQUIRE(l.calls.size() == 4);
    CHECK(l.calls[0].name == "f");
    CHECK(l.calls[0].after_void);
    CHECK(l.tokens[l.calls[0].close].text() == ")");
    CHECK(l.calls[0].close == 13);
    CHECK(l.calls[1].name == "g");
    CHECK_FALSE(l.calls[1].after_void);
    CHECK(l.calls[1].close == 12);
    CHECK(l.calls[2].name == "h");
    CHECK(l.calls[3].name == "k");
    CHECK(l.calls[3].close == Lexed::kUnclosed);
}

TEST_CASE("lexer: lines and columns", "[lexer]") {
    Lexed l = lex_all("ab\ncd\r\n\nef");
    CHECK(l.line_starts == std::vector<uint32_t>{0, 3, 7, 8});
    CHECK(l.line_of(0) == 1);
    CHECK(l.column_of(1) == 2);
    CHECK(l.line_of(3) == 2);
    CHECK(l.line_of(8) == 4);
    CHECK(l.column_of(9) == 2);
    CHECK(lex_all("").line_starts == std::vector<uint32_t>{0});
}

TEST_CASE("lexer: tokens are 16 bytes and keep long literals whole up to 16 MiB", "[lexer]") {
    CHECK(sizeof(LexToken) == 16);
    std::string big = "x = \"" + std::string(20 << 20, 'a') + "\"; y";
    Lexed l = lex_all(big);
    REQUIRE(l.tokens.size() == 5);
    CHECK(l.tokens[2].kind == LexKind::String);
    CHECK(l.tokens[2].text().size() == LexToken::kMaxLength);
    CHECK(l.tokens[4].text() == "y");
    CHECK(l.tokens[4].offset == big.size() - 1);
}

TEST_CASE("lexer: for the scanner, only the tokens it looks at are kept", "[lexer]") {
    std::string filler;
    for (int i = 0; i < 20; ++i) filler += "x = 1;\n";
    // A call of a macro before its #define is not an invocation (as in the C
    // preprocessor), nor is a call of an ordinary function.
    const std::string text =
        "f(1); N(1);\n#define N(x) x\n" + filler + "N(2);\n// @BE z\nfoo(4); bar(5);\n";
    Lexed l = lex(text);  // the tokens point into `text`
    CHECK(texts(l.tokens) == "N ( 2 ) foo ( 4 )");
    REQUIRE(l.calls.size() == 2);
    CHECK(l.calls[0].name == "N");
    CHECK(l.tokens[l.calls[0].close].text() == ")");
    CHECK(l.calls[1].name == "foo");
    // `void name(...)` is kept with the 16 tokens after it, which tell a
    // definition from a prototype.
    const std::string text2 = "void g(int x, h(y));\n" + filler;
    l = lex(text2);
    CHECK(texts(l.tokens) == "void g ( int x , h ( y ) ) ; x = 1 ; x = 1 ; x = 1 ; x = 1");
    REQUIRE(l.calls.size() == 2);
    CHECK(l.calls[0].name == "g");
    CHECK(l.calls[0].after_void);
    CHECK(l.calls[0].close == 10);
    CHECK(l.calls[1].name == "h");
    CHECK(l.calls[1].close == 9);
    // Whatever is kept, lines and comments cover the whole file.
    CHECK(l.line_starts.size() == 22);
}
