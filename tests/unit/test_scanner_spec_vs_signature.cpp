// Written specs checked against the parameters as written: an
// input `const BE::Tensor` must be `arg` and an output `BE::Tensor` must be
// `ret`, which the compiler's function-pointer check cannot see (top-level
// const is not part of a function's type). And which of several functions
// of one name an annotation exports.
#include <catch2/catch.hpp>
#include <string>

#include "test_scanner_util.hpp"

using bekc::ExplicitSpec;
using bekc::test::errors;
using bekc::test::function_option;
using bekc::test::scan;
using bekc::test::spec_of;
using bekc::test::specs;

namespace {

const char* kSwapped =
    "// @BE dbl ret arg\n"
    "void dbl(const BE::Tensor x, BE::Tensor out) {}\n";

const std::string kRetOnInput =
    "note: write 'arg' for an input; if the function writes into 'x', it is an output: "
    "declare it 'BE::Tensor', without const\n";

}  // namespace

TEST_CASE("swapped: an inline spec with arg and ret swapped", "[scanner][swapped]") {
    CHECK(errors(kSwapped, "k.cpp") ==
          "k.cpp:1:12: error: function 'dbl': 'ret' does not match parameter 1, "
          "'const BE::Tensor x': 'ret' is an output, and a const BE::Tensor is an input\n"
          "    // @BE dbl ret arg\n"
          "               ^\n" +
              kRetOnInput);
    // The right order builds.
    CHECK(specs("// @BE dbl arg ret\nvoid dbl(const BE::Tensor x, BE::Tensor out) {}\n") ==
          "dbl(arg, ret) @1\n");
}

TEST_CASE("swapped: arg for an output", "[scanner][swapped]") {
    CHECK(errors("// @BE f arg arg ret\n"
                 "void f(const BE::Tensor a, BE::Tensor b, BE::Tensor c) {}\n") ==
          "k.cu:1:14: error: function 'f': 'arg' does not match parameter 2, 'BE::Tensor b': "
          "'arg' is an input, and a BE::Tensor without const is an output\n"
          "    // @BE f arg arg ret\n"
          "                 ^\n"
          "note: write 'ret' for an output; if the function only reads 'b', declare it "
          "'const BE::Tensor', so that it cannot write into the array JAX passes in\n");
}

TEST_CASE("swapped: aliases are compared after normalising", "[scanner][swapped]") {
    // `rets` is `ret`: reported as written.
    CHECK(errors("// @BE dbl rets args\nvoid dbl(const BE::Tensor x, BE::Tensor out) {}\n") ==
          "k.cu:1:12: error: function 'dbl': 'rets' does not match parameter 1, "
          "'const BE::Tensor x': 'ret' is an output, and a const BE::Tensor is an input\n"
          "    // @BE dbl rets args\n"
          "               ^\n" +
              kRetOnInput);
    CHECK(specs("// @BE f args, rets ctx.stream attrs.k\n"
                "void f(const BE::Tensor x, BE::Tensor y, int64_t s, float k) {}\n") ==
          "f(arg, ret, stream, attr.k:float32) @1\n");
}

TEST_CASE("swapped: every spelling of an input and an output", "[scanner][swapped]") {
    // const by reference, `BE::Tensor const`, `::BE::Tensor`, comments and
    // default arguments between: each input still has to be `arg`.
    for (const char* input : {"const BE::Tensor& x", "const BE::Tensor &x", "BE::Tensor const x",
                              "BE::Tensor const& x", "const ::BE::Tensor x",
                              "const /* in */ BE::Tensor x", "const BE::Tensor x = BE::Tensor()"}) {
        INFO(input);
        std::string sig = std::string("void f(") + input + ", BE::Tensor out) {}\n";
        CHECK(spec_of("// @BE f arg ret\n" + sig) == "arg ret");
        CHECK(errors("// @BE f ret ret\n" + sig).find("'ret' does not match parameter 1") !=
              std::string::npos);
    }
    for (const char* output : {"BE::Tensor out", "::BE::Tensor out", "BE::Tensor __restrict__ out",
                               "volatile BE::Tensor out", "BE::Tensor out = BE::Tensor()"}) {
        INFO(output);
        std::string sig = std::string("void f(const BE::Tensor x, ") + output + ") {}\n";
        CHECK(spec_of("// @BE f arg ret\n" + sig) == "arg ret");
        CHECK(errors("// @BE f arg arg\n" + sig).find("'arg' does not match parameter 2") !=
              std::string::npos);
    }
}

TEST_CASE("swapped: references, pointers and arrays of BE::Tensor", "[scanner][swapped]") {
    const std::string fix =
        "note: take inputs as 'const BE::Tensor' (or 'const BE::Tensor&') and outputs as "
        "'BE::Tensor', by value\n";
    // A written spec meets the same rule inference does, at the token.
    CHECK(errors("// @BE f arg ret\nvoid f(const BE::Tensor x, BE::Tensor& y) {}\n") ==
          "k.cu:1:14: error: function 'f': parameter 'BE::Tensor& y' cannot receive a buffer\n"
          "    // @BE f arg ret\n"
          "                 ^\n" +
              fix);
    CHECK(errors("// @BE f arg ret\nvoid f(const BE::Tensor* x, BE::Tensor y) {}\n") ==
          "k.cu:1:10: error: function 'f': parameter 'const BE::Tensor* x' cannot receive a "
          "buffer\n"
          "    // @BE f arg ret\n"
          "             ^\n" +
              fix);
    CHECK(errors("// @BE f arg ret\nvoid f(const BE::Tensor x, BE::Tensor&& y) {}\n")
              .find("parameter 'BE::Tensor&& y' cannot receive a buffer") != std::string::npos);
    // An array parameter is a pointer.
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y[2]) {}\n") ==
          "k.cu:2:8: error: function 'f': parameter 'BE::Tensor[2] y' cannot receive a buffer\n"
          "    void f(BE::Tensor y[2]) {}\n"
          "           ^\n" +
              fix);
    // BE::Tensor inside another type is not a buffer parameter.
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, std::vector<BE::Tensor> v) {}\n")
              .find("cannot infer an arg_spec token from parameter 'std::vector<BE::Tensor> v'") !=
          std::string::npos);
}

TEST_CASE("swapped: buffer tokens on scalars and scalar tokens on buffers", "[scanner][swapped]") {
    CHECK(errors("// @BE f arg ret arg\n"
                 "void f(const BE::Tensor x, BE::Tensor y, float alpha) {}\n") ==
          "k.cu:1:18: error: function 'f': 'arg' does not match parameter 3, 'float alpha': "
          "'arg' is for a 'const BE::Tensor' parameter\n"
          "    // @BE f arg ret arg\n"
          "                     ^\n"
          "note: write 'attr.alpha:float32' for it; the spec lists one token per C++ parameter, "
          "in order\n");
    CHECK(errors("// @BE f attr.x:float32 ret\n"
                 "void f(const BE::Tensor x, BE::Tensor y) {}\n") ==
          "k.cu:1:10: error: function 'f': 'attr.x:float32' does not match parameter 1, "
          "'const BE::Tensor x': an attribute is a scalar, and a BE::Tensor a buffer\n"
          "    // @BE f attr.x:float32 ret\n"
          "             ^\n"
          "note: write 'arg' for it; the spec lists one token per C++ parameter, in order\n");
}

TEST_CASE("swapped: attribute and stream types", "[scanner][swapped]") {
    CHECK(errors("// @BE f ret attr.alpha:float64\nvoid f(BE::Tensor y, float alpha) {}\n") ==
          "k.cu:1:14: error: function 'f': 'attr.alpha:float64' does not match parameter 2, "
          "'float alpha': the parameter's type is float32, not float64\n"
          "    // @BE f ret attr.alpha:float64\n"
          "                 ^\n"
          "note: write 'attr.alpha:float32', or declare the parameter 'double'\n");
    // Half precision arrives as uint16_t bits: a uint16_t parameter fits.
    CHECK(spec_of("// @BE f ret attr.h:float16 attr.b:bfloat16\n"
                  "void f(BE::Tensor y, uint16_t h, unsigned short b) {}\n") ==
          "ret attr.h:float16 attr.b:bfloat16");
    // An unnamed scalar is fine when the spec names it.
    CHECK(spec_of("// @BE f ret attr.n:int32\nvoid f(BE::Tensor y, int) {}\n") ==
          "ret attr.n:int32");
    // Types bekc does not know are left to the compiler.
    CHECK(spec_of("// @BE f ret attr.n:uint64\nvoid f(BE::Tensor y, size_t n) {}\n") ==
          "ret attr.n:uint64");
    CHECK(errors("// @BE f ret stream\nvoid f(BE::Tensor y, int s) {}\n") ==
          "k.cu:1:14: error: function 'f': 'stream' does not match parameter 2, 'int s': the "
          "stream is an 'int64_t' parameter\n"
          "    // @BE f ret stream\n"
          "                 ^\n"
          "note: write 'attr.s:int32' for it; the spec lists one token per C++ parameter, in "
          "order\n");
    CHECK(errors("// @BE f ret stream\nvoid f(BE::Tensor y, cudaStream_t s) {}\n") ==
          "k.cu:1:14: error: function 'f': 'stream' does not match parameter 2, "
          "'cudaStream_t s': the stream arrives as 'int64_t'\n"
          "    // @BE f ret stream\n"
          "                 ^\n"
          "note: declare the parameter 'int64_t stream' and cast it with (cudaStream_t)stream "
          "inside the function\n");
    CHECK(spec_of("// @BE f ret stream\nvoid f(BE::Tensor y, std::int64_t s) {}\n") ==
          "ret stream");
}

TEST_CASE("swapped: --function and --functions specs", "[scanner][swapped]") {
    const char* text =
        "// a kernel without annotations\n"
        "void dbl(const BE::Tensor x,\n"
        "         BE::Tensor out) {}\n";
    // No annotation line: reported at the parameter.
    CHECK(errors(text, "k.cu", {function_option("dbl=ret,arg")}) ==
          "k.cu:2:10: error: function 'dbl' (spec from --function): 'ret' does not match "
          "parameter 1, 'const BE::Tensor x': 'ret' is an output, and a const BE::Tensor is an "
          "input\n"
          "    void dbl(const BE::Tensor x,\n"
          "             ^\n" +
              kRetOnInput);
    ExplicitSpec from_json{"dbl", {{"args", 0}, {"args", 0}}, "specs.json"};
    CHECK(errors(text, "k.cu", {from_json}) ==
          "k.cu:3:10: error: function 'dbl' (spec from specs.json): 'args' does not match "
          "parameter 2, 'BE::Tensor out': 'arg' is an input, and a BE::Tensor without const is "
          "an output\n"
          "             BE::Tensor out) {}\n"
          "             ^\n"
          "note: write 'ret' for an output; if the function only reads 'out', declare it "
          "'const BE::Tensor', so that it cannot write into the array JAX passes in\n");
    CHECK(specs(text, "k.cu", {function_option("dbl=arg,ret")}) == "dbl(arg, ret) @2\n");
}

TEST_CASE("swapped: functions made by macros", "[scanner][swapped]") {
    // Reported at the token; the note names the macro.
    CHECK(errors("#define DEF(NAME) void NAME(const BE::Tensor x, BE::Tensor y) {}\n"
                 "// @BE f ret arg\n"
                 "DEF(f)\n") ==
          "k.cu:2:10: error: function 'f' (in the expansion of macro 'DEF'): 'ret' does not "
          "match parameter 1, 'const BE::Tensor x': 'ret' is an output, and a const BE::Tensor "
          "is an input\n"
          "    // @BE f ret arg\n"
          "             ^\n" +
              kRetOnInput);
    // A function-like macro that makes the parameter list is expanded.
    const char* params =
        "#define PARAMS(T) const BE::Tensor x, BE::Tensor out, T alpha\n"
        "// @BE f\n"
        "void f(PARAMS(float)) {}\n"
        "// @BE g ret arg attr.alpha\n"
        "void g(PARAMS(double)) {}\n";
    CHECK(errors(params) ==
          "k.cu:4:10: error: function 'g' (in the expansion of macro 'PARAMS'): 'ret' does not "
          "match parameter 1, 'const BE::Tensor x': 'ret' is an output, and a const BE::Tensor "
          "is an input\n"
          "    // @BE g ret arg attr.alpha\n"
          "             ^\n" +
              kRetOnInput);
    CHECK(specs(std::string(params).replace(std::string(params).find("ret arg"), 7, "arg ret")) ==
          "f(arg, ret, attr.alpha:float32) @2\ng(arg, ret, attr.alpha:float64) @4\n");
    // An object-like macro is not expanded: the count says so.
    CHECK(errors("#define PARAMS const BE::Tensor x, BE::Tensor out\n"
                 "// @BE f arg ret\nvoid f(PARAMS) {}\n") ==
          "k.cu:2:1: error: function 'f': the arg_spec has 2 tokens but the signature has 1 "
          "parameters\n"
          "    // @BE f arg ret\n"
          "    ^\n"
          "note: the spec lists one token per C++ parameter, in order; if 'PARAMS' is a macro, "
          "write the parameters out: bekc expands only function-like macros #defined in this "
          "file\n");
}

TEST_CASE("swapped: aliases of BE::Tensor declared in the file", "[scanner][swapped]") {
    for (const char* alias : {"using T = BE::Tensor;", "typedef BE::Tensor T;",
                              "using T = ::BE::Tensor;", "namespace x { using T = BE::Tensor; }"}) {
        INFO(alias);
        std::string sig = std::string(alias) + "\n// @BE f SPEC\nvoid f(const T x, T out) {}\n";
        auto with = [&](const std::string& spec) {
            std::string s = sig;
            return s.replace(s.find("SPEC"), 4, spec);
        };
        CHECK(specs(with("arg ret")) == "f(arg, ret) @2\n");
        CHECK(specs(with("")) == "f(arg, ret) @2\n");
        CHECK(errors(with("ret arg")).find("'ret' does not match parameter 1, 'const T x'") !=
              std::string::npos);
    }
    // `using BE::Tensor;` and `using namespace BE;` make a plain Tensor.
    CHECK(spec_of("using BE::Tensor;\n// @BE f\nvoid f(const Tensor& x, Tensor out) {}\n") ==
          "arg ret");
    CHECK(spec_of("using namespace BE;\n// @BE f\nvoid f(const Tensor x, Tensor out) {}\n") ==
          "arg ret");
    // An alias that carries const and a reference, and one of another alias.
    CHECK(spec_of("using In = const BE::Tensor&;\nusing Out = BE::Tensor;\ntypedef Out O2;\n"
                  "// @BE f\nvoid f(In x, O2 out) {}\n") == "arg ret");
    auto r =
        scan("using In = const BE::Tensor&;\n// @BE f arg ret\nvoid f(In x, BE::Tensor o) {}\n");
    REQUIRE(r.functions.size() == 1);
    CHECK(r.functions[0].tokens[0].by_reference);
    CHECK(errors("using T = BE::Tensor;\n// @BE f arg ret\nvoid f(const T x, T& out) {}\n")
              .find("parameter 'T& out' cannot receive a buffer") != std::string::npos);
}

TEST_CASE("swapped: a name bekc cannot see through", "[scanner][swapped]") {
    // From a header, or declared after the function: rejected, not guessed.
    const std::string note =
        "note: bekc checks 'arg' and 'ret' against the parameter as written: spell it "
        "'const BE::Tensor' (an input) or 'BE::Tensor' (an output), or declare 'using Tensor = "
        "BE::Tensor;' in this file, before the function\n";
    CHECK(errors("// @BE f arg ret\nvoid f(const Tensor x, Tensor out) {}\n") ==
          "k.cu:1:10: error: function 'f': 'arg' does not match parameter 1, 'const Tensor x': "
          "bekc cannot tell whether 'Tensor' is BE::Tensor\n"
          "    // @BE f arg ret\n"
          "             ^\n" +
              note);
    CHECK(errors("// @BE f arg ret\nvoid f(const Tensor x, Tensor out) {}\n"
                 "using Tensor = BE::Tensor;\n") ==
          errors("// @BE f arg ret\nvoid f(const Tensor x, Tensor out) {}\n"));
    // A namespace alias is not followed.
    CHECK(errors("namespace be = BE;\n// @BE f arg ret\nvoid f(const be::Tensor x, be::Tensor o) "
                 "{}\n")
              .find("bekc cannot tell whether 'be::Tensor' is BE::Tensor") != std::string::npos);
    // Inference keeps its own message.
    CHECK(errors("// @BE f\nvoid f(const Tensor x, Tensor out) {}\n")
              .find("cannot infer an arg_spec token from parameter 'const Tensor x'") !=
          std::string::npos);
}

TEST_CASE("which definition: a same-named function in a namespace", "[scanner][swapped]") {
    const char* text =
        "// @BE dbl\n"
        "void dbl(const BE::Tensor x, BE::Tensor out);\n"
        "namespace detail {\n"
        "inline void dbl(BE::Tensor out, const BE::Tensor x) {}\n"
        "}\n";
    // The prototype at the annotation's scope, not the namespaced definition.
    CHECK(specs(text) == "dbl(arg, ret) @1\n");
    CHECK(specs(std::string(text) + "void dbl(const BE::Tensor in, BE::Tensor o) {}\n") ==
          "dbl(arg, ret) @1\n");
    // A class, a struct and a function body are scopes of their own too.
    CHECK(specs("struct K { void f(BE::Tensor a, const BE::Tensor b); };\n"
                "// @BE f\nvoid f(const BE::Tensor x, BE::Tensor out);\n") == "f(arg, ret) @2\n");
    CHECK(specs("// @BE f\nvoid f(const BE::Tensor x, BE::Tensor out);\n"
                "void g() { void f(BE::Tensor o, const BE::Tensor i); }\n") == "f(arg, ret) @1\n");
    // Anonymous and inline namespaces and extern "C" blocks are the enclosing scope.
    CHECK(specs("// @BE f\nvoid f(BE::Tensor out, float a);\n"
                "namespace { void f(BE::Tensor out, float alpha) {} }\n") ==
          "f(ret, attr.alpha:float32) @1\n");
    CHECK(specs("// @BE f\nvoid f(BE::Tensor out, float a);\n"
                "extern \"C\" { void f(BE::Tensor out, float alpha) {} }\n") ==
          "f(ret, attr.alpha:float32) @1\n");
    // A reopened namespace is the same namespace.
    CHECK(specs("namespace k { void f(BE::Tensor y, int); }\n"
                "namespace k {\n// @BE f\nvoid f(BE::Tensor y, int n) {}\n}\n"
                "void f(const BE::Tensor x) {}\n") == "f(ret, attr.n:int32) @3\n");
}

TEST_CASE("which definition: none in the annotation's scope", "[scanner][swapped]") {
    CHECK(errors("// @BE dbl\n"
                 "namespace detail { inline void dbl(BE::Tensor out, const BE::Tensor x) {} }\n"
                 "namespace other { void dbl(BE::Tensor out) {} }\n") ==
          "k.cu:1:8: error: annotated function 'dbl' not found in global scope: the 'dbl' at "
          "k.cu:2 is in namespace 'detail', a different function\n"
          "    // @BE dbl\n"
          "           ^\n"
          "note: bekc exports the function declared in the annotation's scope and calls it by "
          "its plain name from global scope: declare 'void dbl(...)' there\n");
    CHECK(errors("// @BE f\nstruct K { void f(BE::Tensor a); void f(BE::Tensor a, int b); };\n")
              .find("the 'f' at k.cu:2 is in struct 'K', a different function") !=
          std::string::npos);
    // An explicit spec looks at global scope only; another input may define it there.
    auto r =
        scan("namespace a { void f(BE::Tensor y) {} }\nnamespace b { void f(BE::Tensor y) {} }\n",
             "k.cu", {function_option("f")});
    CHECK(r.diagnostics.empty());
    CHECK(r.functions.empty());
    CHECK(r.explicit_found.empty());
}

TEST_CASE("which definition: an overload set is ambiguous", "[scanner][swapped]") {
    // Annotations gathered above the code: the one of f is not directly
    // above either of its two signatures.
    CHECK(errors("// @BE f\n"
                 "// @BE g\n"
                 "void g(BE::Tensor y) {}\n"
                 "void f(BE::Tensor y, int a);\n"
                 "void f(BE::Tensor y, float b) {}\n") ==
          "k.cu:1:8: error: function 'f' is ambiguous: k.cu:4 and k.cu:5 declare it with "
          "different parameters\n"
          "    // @BE f\n"
          "           ^\n"
          "note: bekc exports one function per name: put the annotation directly above the one "
          "to export, or rename the other\n");
    // An annotation away from both (here, above another function) is ambiguous too.
    CHECK(errors("// @BE f ret attr.b:float32\n"
                 "void g(BE::Tensor y) {}\n"
                 "void f(BE::Tensor y, int a) {}\n"
                 "void f(BE::Tensor y, float b) {}\n")
              .find("function 'f' is ambiguous: k.cu:3 and k.cu:4") != std::string::npos);
    // Directly above one of them, the annotation names it; the spec's pointer
    // type picks that overload in the wrapper too.
    CHECK(specs("// @BE f\nvoid f(BE::Tensor y, int a);\nvoid f(BE::Tensor y, float b) {}\n") ==
          "f(ret, attr.a:int32) @1\n");
    CHECK(specs("void f(BE::Tensor y, int a) {}\n// @BE f\nvoid f(BE::Tensor y, float b) {}\n") ==
          "f(ret, attr.b:float32) @2\n");
    // Explicit specs: reported at the first, naming both.
    CHECK(errors("void f(BE::Tensor y, int a) {}\nvoid f(const BE::Tensor x, BE::Tensor y) {}\n",
                 "k.cu", {function_option("f")}) ==
          "k.cu:1:1: error: function 'f' is ambiguous: k.cu:1 and k.cu:2 declare it with "
          "different parameters\n"
          "    void f(BE::Tensor y, int a) {}\n"
          "    ^\n"
          "note: bekc exports one function per name: rename one of them, or move it into a "
          "namespace\n");
}

TEST_CASE("which definition: one function declared several ways", "[scanner][swapped]") {
    // Names, default arguments, top-level const and scalar spellings do not
    // make another function: the definition is used, with its names.
    CHECK(specs("// @BE f\nvoid f(const BE::Tensor, BE::Tensor, int = 3);\n"
                "void f(const BE::Tensor x, BE::Tensor y, int32_t n) {}\n") ==
          "f(arg, ret, attr.n:int32) @1\n");
    // The definition decides whether a by-value tensor is an input.
    CHECK(specs("// @BE f\nvoid f(const BE::Tensor x, BE::Tensor y);\n"
                "void f(BE::Tensor x, BE::Tensor y) {}\n") == "f(ret, ret) @1\n");
    CHECK(errors("// @BE f arg ret\nvoid f(const BE::Tensor x, BE::Tensor y);\n"
                 "void f(BE::Tensor x, BE::Tensor y) {}\n")
              .find("'arg' does not match parameter 1, 'BE::Tensor x'") != std::string::npos);
    // Through an alias, too.
    CHECK(specs("using T = BE::Tensor;\n// @BE f\nvoid f(const T, T);\n"
                "void f(const BE::Tensor x, BE::Tensor y) {}\n") == "f(arg, ret) @2\n");
}

TEST_CASE("swapped: a macro in a default argument is not expanded", "[scanner][swapped]") {
    // The default is dropped, so the parameter keeps its own place for errors.
    const char* text =
        "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n"
        "// @BE f\n"
        "void f(BE::Tensor y, int n = MAX(1, 2), long* p = 0) {}\n";
    CHECK(errors(text) ==
          "k.cu:3:41: error: function 'f': cannot infer an arg_spec token from parameter "
          "'long* p'\n"
          "    void f(BE::Tensor y, int n = MAX(1, 2), long* p = 0) {}\n"
          "                                            ^\n"
          "note: pointers, references and other types are not inferable: write the spec inline "
          "with explicit types, e.g. '// @BE <function> arg ret attr.<name>:<type>'\n");
}

TEST_CASE("which definition: declarations written alike", "[scanner][swapped]") {
    // Any of them gives the same spec; the file is not read again.
    CHECK(specs("// @BE f\nvoid f(const BE::Tensor x, BE::Tensor y);\n"
                "namespace d { void f(const BE::Tensor x, BE::Tensor y) {} }\n"
                "void f(const BE::Tensor x, BE::Tensor y) {}\n") == "f(arg, ret) @1\n");
}
