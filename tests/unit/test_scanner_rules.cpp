// The rules of SPEC §1.2, each violation with its exact diagnostic: file,
// line, column, the source line, a caret and a note saying how to fix it.
#include <catch2/catch.hpp>
#include <string>

#include "test_scanner_util.hpp"

using bekc::test::errors;
using bekc::test::spec_of;
using bekc::test::specs;

TEST_CASE("rules: at least one ret", "[scanner][rules]") {
    CHECK(errors("// @BE f arg\nvoid f(const BE::Tensor x) {}\n") ==
          "k.cu:1:1: error: function 'f': no 'ret' token: a function must have at least one "
          "output\n"
          "    // @BE f arg\n"
          "    ^\n"
          "note: XLA allocates outputs; add a 'ret' token and a BE::Tensor parameter the "
          "function writes its result into\n");
}

TEST_CASE("rules: at most one stream", "[scanner][rules]") {
    CHECK(errors("// @BE f ret stream stream\nvoid f(BE::Tensor y, int64_t s, int64_t t) {}\n") ==
          "k.cu:1:21: error: function 'f': more than one 'stream' token\n"
          "    // @BE f ret stream stream\n"
          "                        ^\n"
          "note: a function receives at most one CUDA stream\n");
}

TEST_CASE("rules: no stream in a CPU build", "[scanner][rules]") {
    const std::string fix =
        "note: CPU handlers have no CUDA stream: remove the 'stream' token and the int64_t "
        "parameter, or compile the file as .cu\n";
    CHECK(errors("// @BE f ret ctx.stream\nvoid f(BE::Tensor y, int64_t stream) {}\n", "k.cpp") ==
          "k.cpp:1:14: error: function 'f': 'stream' in a CPU (.cpp) build\n"
          "    // @BE f ret ctx.stream\n"
          "                 ^\n" +
              fix);
    // Inferred from `int64_t stream`: reported at the annotation.
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, int64_t stream) {}\n", "k.cc") ==
          "k.cc:1:1: error: function 'f': 'stream' in a CPU (.cpp) build\n"
          "    // @BE f\n"
          "    ^\n" +
              fix);
    // The same file as .cu is fine.
    CHECK(spec_of("// @BE f\nvoid f(BE::Tensor y, int64_t stream) {}\n") == "ret stream");
}

TEST_CASE("rules: a function annotated twice", "[scanner][rules]") {
    CHECK(errors("// @BE f ret\n// @BE f\nvoid f(BE::Tensor y) {}\n") ==
          "k.cu:2:8: error: function 'f' is annotated twice\n"
          "    // @BE f\n"
          "           ^\n"
          "note: the first annotation is at k.cu:1; remove one of them\n");
}

TEST_CASE("rules: an attribute listed twice", "[scanner][rules]") {
    CHECK(errors("// @BE f ret attr.a:float32 attrs.a:int32\n"
                 "void f(BE::Tensor y, float a, int b) {}\n") ==
          "k.cu:1:29: error: function 'f': attribute 'a' is listed twice\n"
          "    // @BE f ret attr.a:float32 attrs.a:int32\n"
          "                                ^\n"
          "note: give each attribute a distinct name\n");
}

TEST_CASE("rules: unknown tokens, with a suggestion when one is close", "[scanner][rules]") {
    const std::string list =
        "tokens are 'arg', 'ret', 'stream' and 'attr.<name>' or 'attr.<name>:<type>' (aliases: "
        "'args', 'rets', 'ctx.stream', 'attrs.<name>')\n";
    CHECK(errors("// @BE f agr ret\nvoid f(const BE::Tensor x, BE::Tensor y) {}\n") ==
          "k.cu:1:10: error: function 'f': unknown arg_spec token 'agr'\n"
          "    // @BE f agr ret\n"
          "             ^\n"
          "note: did you mean 'arg'? " +
              list);
    CHECK(errors("// @BE f ret foo\nvoid f(BE::Tensor y, float a) {}\n") ==
          "k.cu:1:14: error: function 'f': unknown arg_spec token 'foo'\n"
          "    // @BE f ret foo\n"
          "                 ^\n"
          "note: " +
              list);
    CHECK(errors("// @BE f ret strem\nvoid f(BE::Tensor y, int64_t stream) {}\n")
              .find("note: did you mean 'stream'? ") != std::string::npos);
    CHECK(errors("// @BE f ret attr:alpha\nvoid f(BE::Tensor y, float alpha) {}\n")
              .find("note: did you mean 'attr.alpha'? ") != std::string::npos);
    CHECK(errors("// @BE f ret atr.alpha:float32\nvoid f(BE::Tensor y, float alpha) {}\n")
              .find("note: did you mean 'attr.alpha:float32'? ") != std::string::npos);
}

TEST_CASE("rules: unknown attribute types, with \"did you mean\"", "[scanner][rules]") {
    const std::string types =
        "attribute types are: bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, "
        "float32, float64, float16, bfloat16\n";
    CHECK(errors("// @BE f ret attr.a:float\nvoid f(BE::Tensor y, float a) {}\n") ==
          "k.cu:1:21: error: function 'f': unknown attribute type 'float' in 'attr.a:float'\n"
          "    // @BE f ret attr.a:float\n"
          "                        ^\n"
          "note: did you mean 'attr.a:float32'? " +
              types);
    CHECK(errors("// @BE f ret attr.a:flaot64\nvoid f(BE::Tensor y, double a) {}\n")
              .find("note: did you mean 'attr.a:float64'? ") != std::string::npos);
    CHECK(errors("// @BE f ret attrs.n:uint\nvoid f(BE::Tensor y, unsigned n) {}\n")
              .find("note: did you mean 'attr.n:uint32'? ") != std::string::npos);
    CHECK(errors("// @BE f ret attr.a:quux\nvoid f(BE::Tensor y, float a) {}\n") ==
          "k.cu:1:21: error: function 'f': unknown attribute type 'quux' in 'attr.a:quux'\n"
          "    // @BE f ret attr.a:quux\n"
          "                        ^\n"
          "note: " +
              types);
}

TEST_CASE("rules: function and attribute names must be ASCII identifiers", "[scanner][rules]") {
    const std::string fix =
        "note: names are emitted into generated code: use ASCII letters, digits and '_', not "
        "starting with a digit, and not a C++ keyword\n";
    CHECK(errors("// @BE caf\xc3\xa9\nvoid caf\xc3\xa9(BE::Tensor y) {}\n") ==
          "k.cu:1:8: error: function name 'caf\xc3\xa9' is not an ASCII C++ identifier\n"
          "    // @BE caf\xc3\xa9\n"
          "           ^\n" +
              fix);
    CHECK(errors("// @BE 2f\n") ==
          "k.cu:1:8: error: function name '2f' is not an ASCII C++ identifier\n"
          "    // @BE 2f\n"
          "           ^\n" +
              fix);
    CHECK(errors("// @BE delete ret\n") ==
          "k.cu:1:8: error: function name 'delete' is a C++ keyword\n"
          "    // @BE delete ret\n"
          "           ^\n" +
              fix);
    const std::string attr_fix =
        "note: attribute names are emitted into generated C++: use ASCII letters, digits and "
        "'_', not starting with a digit, and not a C++ keyword\n";
    CHECK(errors("// @BE f ret attr.for:int32\nvoid f(BE::Tensor y, int n) {}\n") ==
          "k.cu:1:19: error: function 'f': attribute name 'for' in 'attr.for:int32' is a C++ "
          "keyword\n"
          "    // @BE f ret attr.for:int32\n"
          "                      ^\n" +
              attr_fix);
    CHECK(errors("// @BE f ret attrs.\xce\xb1\nvoid f(BE::Tensor y, int n) {}\n") ==
          "k.cu:1:20: error: function 'f': attribute name '\xce\xb1' in 'attrs.\xce\xb1' is not "
          "an ASCII C++ identifier\n"
          "    // @BE f ret attrs.\xce\xb1\n"
          "                       ^\n" +
              attr_fix);
}

TEST_CASE("rules: an annotation without a function", "[scanner][rules]") {
    CHECK(errors("//   @BE   \nvoid f(BE::Tensor y) {}\n") ==
          "k.cu:1:1: error: '@BE' annotation names no function\n"
          "    //   @BE   \n"
          "    ^\n"
          "note: write '// @BE <function> [tokens...]'\n");
    // `@BEfoo` and `@BE` later in a comment are not annotations at all.
    CHECK(specs("// @BEfoo ret\n// see the // @BE docs\n// @BE f\nvoid f(BE::Tensor y) {}\n") ==
          "f(ret) @3\n");
}

TEST_CASE("rules: the annotated function must exist", "[scanner][rules]") {
    CHECK(errors(
              "// @BE vector_add arg ret\nvoid vector_ad(const BE::Tensor a, BE::Tensor b) {}\n") ==
          "k.cu:1:8: error: annotated function 'vector_add' not found\n"
          "    // @BE vector_add arg ret\n"
          "           ^\n"
          "note: bekc looks for 'void vector_add(...)' in this file, written out or made by a "
          "macro #defined in this file; check the spelling\n");
    // A function that is not `void` is not an entry point.
    CHECK(errors("// @BE f\nint f(BE::Tensor y) { return 0; }\n")
              .find("annotated function 'f' not found") != std::string::npos);
}

TEST_CASE("rules: an inline spec has one token per parameter", "[scanner][rules]") {
    CHECK(errors("// @BE f arg ret\nvoid f(const BE::Tensor x, BE::Tensor y, float a) {}\n") ==
          "k.cu:1:1: error: function 'f': the arg_spec has 2 tokens but the signature has 3 "
          "parameters\n"
          "    // @BE f arg ret\n"
          "    ^\n"
          "note: the spec lists one token per C++ parameter, in order\n");
}

TEST_CASE("rules: a bare attr.x takes its type from the parameter x", "[scanner][rules]") {
    CHECK(spec_of("// @BE f arg ret attr.n attr.scale\n"
                  "void f(const BE::Tensor x, BE::Tensor y, uint16_t n, double scale) {}\n") ==
          "arg ret attr.n:uint16 attr.scale:float64");
    // Found by name, so an explicit type elsewhere does not matter.
    CHECK(spec_of("// @BE f ret attrs.b attr.a:float16\nvoid f(BE::Tensor y, bool b, "
                  "uint16_t a) {}\n") == "ret attr.b:bool attr.a:float16");
    const std::string fix =
        "note: give the type explicitly: 'attr.k:<type>' with <type> one of bool, int8, uint8, "
        "int16, uint16, int32, uint32, int64, uint64, float32, float64, float16, bfloat16\n";
    CHECK(errors("// @BE f ret attr.k\nvoid f(BE::Tensor y, int n) {}\n") ==
          "k.cu:1:14: error: function 'f': cannot infer the type of 'attr.k': no parameter is "
          "named 'k'\n"
          "    // @BE f ret attr.k\n"
          "                 ^\n" +
              fix);
    CHECK(errors("// @BE f ret attr.k\nvoid f(BE::Tensor y, const int* k) {}\n") ==
          "k.cu:1:14: error: function 'f': cannot infer the type of 'attr.k': parameter "
          "'const int* k' is not a scalar bekc can infer\n"
          "    // @BE f ret attr.k\n"
          "                 ^\n" +
              fix);
}

TEST_CASE("rules: a file without any annotation", "[scanner][rules]") {
    CHECK(errors("void f(BE::Tensor y) {}\n// just a comment\n") ==
          "k.cu: error: no exported functions: the file has no '// @BE' annotation\n"
          "note: mark each entry point with a '// @BE <function>' comment above it, or name the "
          "exports with --function '<function>=arg,ret' or --functions FILE.json\n");
    CHECK(errors("") ==
          "k.cu: error: no exported functions: the file has no '// @BE' annotation\n"
          "note: mark each entry point with a '// @BE <function>' comment above it, or name the "
          "exports with --function '<function>=arg,ret' or --functions FILE.json\n");
}

TEST_CASE("rules: every error in a file is reported, in order", "[scanner][rules]") {
    CHECK(errors("// @BE a ret foo\nvoid a(BE::Tensor y) {}\n// @BE b arg\nvoid b(const "
                 "BE::Tensor x) {}\n// @BE c\nvoid c(BE::Tensor y) {}\n")
              .find("'foo'") < errors("// @BE a ret foo\nvoid a(BE::Tensor y) {}\n// @BE b arg\n"
                                      "void b(const BE::Tensor x) {}\n")
                                   .find("function 'b'"));
}
