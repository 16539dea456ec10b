// Where an annotation is not one: inside block comments, string and raw
// string literals, `#if 0` groups and `//` comments continued with a
// backslash. And files with Windows line endings.
#include <catch2/catch.hpp>
#include <string>

#include "test_scanner_util.hpp"

using bekc::test::errors;
using bekc::test::specs;

namespace {

// A live export after `hidden`, so that a file that hides everything still
// has one annotation and the result shows only what was found.
std::string with_live(const std::string& hidden) {
    return hidden + "\n// @BE live\nvoid live(BE::Tensor y) {}\n";
}

int live_line(const std::string& hidden) {
    int n = 2;
    for (char c : hidden) n += c == '\n';
    return n;
}

std::string only_live(const std::string& hidden) {
    return "live(ret) @" + std::to_string(live_line(hidden)) + "\n";
}

}  // namespace

TEST_CASE("hiding: block comments", "[scanner][hiding]") {
    for (std::string hidden : {"/* // @BE a ret */", "/*\n// @BE a ret\n*/",
                               "/* a comment\n * // @BE a ret\n */ int x;"}) {
        INFO(hidden);
        CHECK(specs(with_live(hidden)) == only_live(hidden));
    }
}

TEST_CASE("hiding: string, character and raw string literals", "[scanner][hiding]") {
    for (std::string hidden :
         {"const char* s = \"// @BE a ret\";", "const char* s = \"\\\" // @BE a ret\";",
          "const char* s = u8\"// @BE a ret\";", "const wchar_t* s = L\"// @BE a ret\";",
          "char c = '\"'; const char* s = \"// @BE a ret\";",
          "const char* s = R\"(\n// @BE a ret\n)\";",
          "const char* s = R\"x(\n)\"\n// @BE a ret\n)x\";",
          "const char* s = LR\"delim(\n// @BE a ret\n)delim\";"}) {
        INFO(hidden);
        CHECK(specs(with_live(hidden)) == only_live(hidden));
    }
}

TEST_CASE("hiding: #if 0 groups, and their #else and #elif", "[scanner][hiding]") {
    CHECK(specs("#if 0\n// @BE a ret\nvoid a(BE::Tensor y) {}\n#endif\n"
                "// @BE b ret\nvoid b(BE::Tensor y) {}\n") == "b(ret) @5\n");
    CHECK(specs("#if false\n// @BE a ret\n#else\n// @BE b ret\nvoid b(BE::Tensor y) {}\n"
                "#endif\n") == "b(ret) @4\n");
    CHECK(specs("#  if 0 /* disabled */\n// @BE a ret\n#elif defined(X)\n// @BE b ret\n"
                "void b(BE::Tensor y) {}\n#endif\n") == "b(ret) @4\n");
    // Nested conditionals inside the disabled group are skipped whole.
    CHECK(specs("#if 0\n#ifdef X\n// @BE a ret\n#else\n// @BE c ret\n#endif\n// @BE d ret\n"
                "#else\n// @BE b ret\nvoid b(BE::Tensor y) {}\n#endif\n") == "b(ret) @9\n");
    // Other conditionals are live, both ways.
    CHECK(specs("#ifdef __CUDACC__\n// @BE a ret\nvoid a(BE::Tensor y) {}\n#else\n// @BE b ret\n"
                "void b(BE::Tensor y) {}\n#endif\n") == "a(ret) @2\nb(ret) @5\n");
}

TEST_CASE("hiding: comments and literals inside #if 0 do not end it early", "[scanner][hiding]") {
    // A `/*` in a `//` comment or a string is not a comment, and an apostrophe
    // in prose is not a character literal that runs on.
    CHECK(specs("#if 0\n// see /* here\n// @BE a ret\n#endif\n// @BE b ret\n"
                "void b(BE::Tensor y) {}\n// */\n") == "b(ret) @5\n");
    CHECK(
        specs("#if 0\nconst char* s = \"/*\";\n#endif\n// @BE b ret\nvoid b(BE::Tensor y) {}\n") ==
        "b(ret) @4\n");
    CHECK(specs("#if 0\nthis isn't code\n#endif\n// @BE b ret\nvoid b(BE::Tensor y) {}\n") ==
          "b(ret) @4\n");
    // A block comment may hide the #endif.
    CHECK(specs("#if 0\n/*\n#endif\n*/\n// @BE a ret\n#endif\n// @BE b ret\n"
                "void b(BE::Tensor y) {}\n") == "b(ret) @7\n");
}

TEST_CASE("hiding: a // comment continued with a backslash", "[scanner][hiding]") {
    // The next line belongs to the comment, so it is not an annotation of its own.
    CHECK(specs(with_live("// a note \\\n// @BE a ret")) ==
          only_live("// a note \\\n// @BE a ret"));
    CHECK(specs(with_live("// a note \\\r\n// @BE a ret")) ==
          only_live("// a note \\\r\n// @BE a ret"));
    // An annotation continued on the next line keeps its tokens.
    CHECK(specs("// @BE f arg \\\n   ret attr.n\nvoid f(const BE::Tensor x, BE::Tensor y, int n) "
                "{}\n") == "f(arg, ret, attr.n:int32) @1\n");
}

TEST_CASE("hiding: annotations in code lines and directives", "[scanner][hiding]") {
    // A `//` comment after code is still an annotation.
    CHECK(specs("int x; // @BE f ret\nvoid f(BE::Tensor y) {}\n") == "f(ret) @1\n");
    // A comment inside a directive is not.
    CHECK(specs(with_live("#define X 1 // @BE a ret")) == only_live("#define X 1 // @BE a ret"));
}

TEST_CASE("hiding: CRLF files", "[scanner][hiding]") {
    const std::string text =
        "// @BE f\r\n"
        "void f(const BE::Tensor x,\r\n"
        "       BE::Tensor y, float alpha) {}\r\n"
        "// @BE g arg ret attr.n\r\n"
        "void g(const BE::Tensor x, BE::Tensor y, int n) {}\r\n";
    CHECK(specs(text) == "f(arg, ret, attr.alpha:float32) @1\ng(arg, ret, attr.n:int32) @4\n");
    // The source line is shown without its '\r', and the caret lines up.
    CHECK(errors("// @BE f ret flaot\r\nvoid f(BE::Tensor y, float a) {}\r\n") ==
          "k.cu:1:14: error: function 'f': unknown arg_spec token 'flaot'\n"
          "    // @BE f ret flaot\n"
          "                 ^\n"
          "note: tokens are 'arg', 'ret', 'stream' and 'attr.<name>' or 'attr.<name>:<type>' "
          "(aliases: 'args', 'rets', 'ctx.stream', 'attrs.<name>')\n");
    CHECK(errors("// @BE f\r\nvoid f(BE::Tensor y,\r\n       float* p) {}\r\n") ==
          "k.cu:3:8: error: function 'f': cannot infer an arg_spec token from parameter "
          "'float* p'\n"
          "           float* p) {}\n"
          "           ^\n"
          "note: pointers, references and other types are not inferable: write the spec inline "
          "with explicit types, e.g. '// @BE <function> arg ret attr.<name>:<type>'\n");
}

TEST_CASE("hiding: a macro defined over CRLF continuation lines", "[scanner][hiding]") {
    CHECK(
        specs("#define M(N, T) \\\r\n  void N(const BE::Tensor x, \\\r\n  BE::Tensor y, T a) {}\r\n"
              "// @BE m_f32\r\nM(m_f32, float)\r\n") == "m_f32(arg, ret, attr.a:float32) @4\n");
}
