// Functions made by macros, the main case in real kernel libraries: token
// pasting, nested and variadic macros, several functions per invocation,
// macros from headers, and which signature wins when there are several.
#include <catch2/catch.hpp>
#include <string>

#include "test_scanner_util.hpp"

using bekc::test::errors;
using bekc::test::scan;
using bekc::test::specs;

TEST_CASE("macros: ## on both sides of a parameter", "[scanner][macros]") {
    CHECK(specs("#define DEF(OP, T) \\\n"
                "    void bench_##OP##_fwd(const BE::Tensor x, BE::Tensor y, T a) {}\n"
                "// @BE bench_relu_fwd\n"
                "DEF(relu, float)\n"
                "// @BE bench_gelu_fwd arg ret attr.a\n"
                "DEF(gelu, double)\n") ==
          "bench_relu_fwd(arg, ret, attr.a:float32) @3\n"
          "bench_gelu_fwd(arg, ret, attr.a:float64) @5\n");
    // Pasting onto an argument that is itself several tokens joins the first.
    CHECK(specs("#define DEF(S, T) void f##S(BE::Tensor y, T a) {}\n"
                "// @BE f_u64\nDEF(_u64, unsigned long long)\n") ==
          "f_u64(ret, attr.a:uint64) @2\n");
}

TEST_CASE("macros: nested macros", "[scanner][macros]") {
    CHECK(specs("#define PARAMS(T) const BE::Tensor x, BE::Tensor y, T alpha\n"
                "#define INNER(NAME, T) void NAME(PARAMS(T), int64_t stream) {}\n"
                "#define OUTER(S, T) INNER(scale##S, T)\n"
                "// @BE scale_f16\n"
                "OUTER(_f16, uint16_t)\n") ==
          "scale_f16(arg, ret, attr.alpha:uint16, stream) @4\n");
}

TEST_CASE("macros: variadic macros", "[scanner][macros]") {
    CHECK(specs("#define RULE(NAME, ...) \\\n"
                "    void NAME(const BE::Tensor w, BE::Tensor out, __VA_ARGS__) {}\n"
                "// @BE stdp\n"
                "RULE(stdp, float eta, double tau, bool clip)\n"
                "// @BE decay\n"
                "RULE(decay, int32_t window)\n") ==
          "stdp(arg, ret, attr.eta:float32, attr.tau:float64, attr.clip:bool) @3\n"
          "decay(arg, ret, attr.window:int32) @5\n");
    // A parenthesised argument passes its commas through, as in the corpus.
    CHECK(specs("#define EXPAND(...) __VA_ARGS__\n"
                "#define DEF(NAME, PARAMS) void NAME(BE::Tensor y, EXPAND PARAMS) {}\n"
                "// @BE g\nDEF(g, (int a, float b))\n") ==
          "g(ret, attr.a:int32, attr.b:float32) @3\n");
}

TEST_CASE("macros: two functions from one invocation, two annotations", "[scanner][macros]") {
    CHECK(specs("#define PAIR(OP, T) \\\n"
                "    void OP##_fwd(const BE::Tensor x, BE::Tensor y, T slope) {} \\\n"
                "    void OP##_bwd(const BE::Tensor x, const BE::Tensor dy, BE::Tensor dx, \\\n"
                "                  T slope) {}\n"
                "// @BE leaky_fwd\n"
                "// @BE leaky_bwd\n"
                "PAIR(leaky, float)\n") ==
          "leaky_fwd(arg, ret, attr.slope:float32) @5\n"
          "leaky_bwd(arg, arg, ret, attr.slope:float32) @6\n");
}

TEST_CASE("macros: stringizing and object-like macros do not disturb", "[scanner][macros]") {
    CHECK(specs("#define N 4\n"
                "#define DEF(NAME) void NAME(BE::Tensor y) { check(#NAME \": bad\", N); }\n"
                "// @BE k\nDEF(k)\n") == "k(ret) @3\n");
}

TEST_CASE("macros: a macro from a header, with a full inline spec", "[scanner][macros]") {
    CHECK(specs("#include \"defs.h\"\n"
                "// @BE axpy_f32 arg arg ret attr.alpha:float32 stream\n"
                "BE_DEFINE_AXPY(_f32, float)\n") ==
          "axpy_f32(arg, arg, ret, attr.alpha:float32, stream) @2\n");
}

TEST_CASE("macros: a macro from a header, without a full spec", "[scanner][macros]") {
    const std::string fix_start =
        "note: bekc cannot see a signature made by a macro from a "
        "header: give the full spec inline, every attribute with its "
        "type, e.g. '// @BE ";
    CHECK(errors("#include \"defs.h\"\n// @BE axpy_f32\nBE_DEFINE_AXPY(_f32, float)\n") ==
          "k.cu:2:8: error: annotated function 'axpy_f32' not found: it comes from macro "
          "'BE_DEFINE_AXPY', which is not #defined in this file\n"
          "    // @BE axpy_f32\n"
          "           ^\n" +
              fix_start + "axpy_f32 arg ret attr.<name>:<type>'\n");
    // A bare attribute needs the signature, so it is not a full spec either.
    CHECK(errors("// @BE axpy_f32 arg ret attr.alpha\nBE_DEFINE_AXPY(_f32, float)\n")
              .find("it comes from macro 'BE_DEFINE_AXPY'") != std::string::npos);
}

TEST_CASE("macros: errors in a macro-made signature point at the annotation", "[scanner][macros]") {
    CHECK(errors("#define DEF(NAME, T) void NAME(BE::Tensor y, T* p) {}\n"
                 "// @BE f\nDEF(f, float)\n") ==
          "k.cu:2:1: error: function 'f' (in the expansion of macro 'DEF'): cannot infer an "
          "arg_spec token from parameter 'float* p'\n"
          "    // @BE f\n"
          "    ^\n"
          "note: pointers, references and other types are not inferable: write the spec inline "
          "with explicit types, e.g. '// @BE <function> arg ret attr.<name>:<type>'\n");
    CHECK(errors("#define DEF(NAME) void NAME(BE::Tensor y, int n) {}\n// @BE f ret\nDEF(f)\n") ==
          "k.cu:2:1: error: function 'f': the arg_spec has 1 tokens but the signature (in the "
          "expansion of macro 'DEF') has 2 parameters\n"
          "    // @BE f ret\n"
          "    ^\n"
          "note: the spec lists one token per C++ parameter, in order\n");
}

TEST_CASE("macros: runaway macros stop", "[scanner][macros]") {
    // Self-reference is not expanded again, as in the C preprocessor.
    CHECK(specs("#define R(N) R(N) void N(BE::Tensor y) {}\n// @BE r\nR(r)\n") == "r(ret) @2\n");
    // An unclosed invocation hides nothing after it.
    CHECK(specs("#define M(x) x\nM(\n// @BE g\nvoid g(BE::Tensor y) {}\n") == "g(ret) @3\n");
    // Exponential growth hits the expansion budget and says so.
    std::string bomb =
        "#define A(x) x x x x x x x x x x\n"
        "#define B(x) A(A(A(A(A(A(A(x)))))))\n"
        "// @BE f\nvoid f(BE::Tensor y) {}\n"
        "B(1)\n";
    auto r = scan(bomb);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].render().rfind("k.cu:5:1: error: expanding macro 'B' produces more "
                                          "than 26",
                                          0) == 0);
}

TEST_CASE("macros: a prototype before the definition", "[scanner][macros]") {
    // Annotated above the definition: the definition is used.
    CHECK(specs("void f(const BE::Tensor, BE::Tensor);\n"
                "// @BE f\nvoid f(const BE::Tensor x, BE::Tensor y) {}\n") == "f(arg, ret) @2\n");
    // Annotated above a prototype with unnamed parameters: the definition,
    // which names them, still gives the attribute names.
    CHECK(specs("// @BE f\nvoid f(BE::Tensor, float);\n"
                "void f(BE::Tensor y, float alpha) {}\n") == "f(ret, attr.alpha:float32) @1\n");
    // A prototype alone (defined in another file of the module) is enough.
    CHECK(specs("// @BE f\nvoid f(BE::Tensor y, int n);\n") == "f(ret, attr.n:int32) @1\n");
    // With two definitions (live #if branches), the first after the annotation.
    CHECK(specs("void f(BE::Tensor y, int a) {}\n// @BE f\nvoid f(BE::Tensor y, float b) {}\n") ==
          "f(ret, attr.b:float32) @2\n");
}
