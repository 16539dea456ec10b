// The macro expander (lib/scan/macro) on its own: argument collection,
// pasting, stringizing, __VA_ARGS__, nesting, and its limits.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../helpers/tokens.hpp"
#include "scan/lexer.hpp"
#include "scan/macro.hpp"

using namespace bekc;
using bekc::test::texts;

namespace {

// Expands the first call of a macro in `text`.
std::string expand(const std::string& text) {
    static std::vector<std::string> keep;  // the tokens point into the text
    keep.push_back(text);
    Lexed lexed = lex(keep.back());
    MacroExpander m(lexed);
    for (const auto& call : lexed.calls)
        if (m.is_macro(call.name) && call.close != Lexed::kUnclosed)
            return texts(m.expand_at(lexed.tokens, call.index, call.close));
    return "<no call>";
}

}  // namespace

TEST_CASE("macro: brackets are matched as one kind", "[macro]") {
    Lexed l = lex("a ( b [ c ) d ] ( ", /*all_tokens=*/true);
    auto match = match_brackets(l.tokens);
    REQUIRE(match.size() == l.tokens.size());
    CHECK(match[1] == 7);  // `(` ... `]`: any closer closes the innermost opener
    CHECK(match[3] == 5);
    CHECK(match[8] == l.tokens.size());
    CHECK(matching_close(l.tokens, 1) == 7);
    CHECK(matching_close(l.tokens, 8) == l.tokens.size());
}

TEST_CASE("macro: parameters, pasting and stringizing", "[macro]") {
    CHECK(expand("#define F(a, b) x a y b z\nF(1, 2 3)") == "x 1 y 2 3 z");
    CHECK(expand("#define F(a, b) pre_##a##_mid_##b\nF(x, y)") == "pre_x_mid_y");
    // Pasting onto a multi-token argument joins only its first token.
    CHECK(expand("#define F(s, t) f##s(t v)\nF(_u8, unsigned char)") == "f_u8 ( unsigned char v )");
    // An empty argument leaves the left side alone.
    CHECK(expand("#define F(s) name##s()\nF()") == "name ( )");
    CHECK(expand("#define F(a) #a: a\nF(x + 1)") == "\"x+1\" : x + 1");
    // Brackets group commas inside arguments.
    CHECK(expand("#define F(a, b) [a] [b]\nF(g(1, 2), {3, 4})") == "[ g ( 1 , 2 ) ] [ { 3 , 4 } ]");
    // Missing arguments are empty; extra ones are dropped.
    CHECK(expand("#define F(a, b) <a|b>\nF(1)") == "< 1 | >");
    CHECK(expand("#define F(a) <a>\nF(1, 2)") == "< 1 >");
}

TEST_CASE("macro: __VA_ARGS__ takes the rest, commas included", "[macro]") {
    CHECK(expand("#define V(n, ...) n(__VA_ARGS__)\nV(f, int a, float b)") ==
          "f ( int a , float b )");
    CHECK(expand("#define V(...) [__VA_ARGS__]\nV()") == "[ ]");
}

TEST_CASE("macro: nested invocations are expanded", "[macro]") {
    CHECK(expand("#define I(x) <x>\n#define O(y) I(y) I(I(y))\nO(1)") == "< 1 > < < 1 > >");
    // Arguments are expanded before substitution, unless next to ## or #.
    CHECK(expand("#define P(a, b) a##b\n#define X(a, b) P(a, b)\nX(X(f, _), f32)") == "f_f32");
    CHECK(expand("#define I(x) <x>\n#define S(x) #x x\nS(I(1))") == "\"I(1)\" < 1 >");
    // A macro named in its own expansion stays as it is.
    CHECK(expand("#define R(x) x R(x)\nR(1)") == "1 R ( 1 )");
    // An invocation that is never closed is left as written.
    CHECK(expand("#define I(x) <x>\n#define O(y) y I(\nO(1))") == "1 I (");
    // A name without `(` is not an invocation.
    CHECK(expand("#define I(x) <x>\n#define O(y) I y\nO(1)") == "I 1");
}

TEST_CASE("macro: the first-character filter still finds every macro", "[macro]") {
    Lexed l = lex("#define Ab(x) x\n#define b_long_name(x) x\n");
    MacroExpander m(l);
    CHECK(m.is_macro("Ab"));
    CHECK(m.is_macro("b_long_name"));
    CHECK_FALSE(m.is_macro("A"));
    CHECK_FALSE(m.is_macro("Ac"));
    CHECK_FALSE(m.is_macro(""));
    CHECK_FALSE(m.is_macro("b_long_name_"));
}

TEST_CASE("macro: a runaway expansion stops at the budget", "[macro]") {
    std::string text =
        "#define A(x) x x x x x x x x x x\n"
        "#define B(x) A(A(A(A(A(A(A(x)))))))\n"
        "B(1)\n";
    Lexed l = lex(text);
    MacroExpander m(l);
    REQUIRE(l.calls.size() >= 1);
    auto out = m.expand_at(l.tokens, l.calls[0].index, l.calls[0].close);
    CHECK(m.exhausted());
    CHECK(out.size() <= m.token_limit());
    CHECK(m.token_limit() >= 256 * 1024);
}
