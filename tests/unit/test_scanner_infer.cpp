// Inference of an arg_spec from a C++ signature (SPEC §1.2): every scalar
// spelling, tensors by value and by reference, multi-line signatures, and
// every parameter that cannot be inferred, with its exact diagnostic.
#include <catch2/catch.hpp>
#include <string>

#include "test_scanner_util.hpp"

using bekc::test::errors;
using bekc::test::scan;
using bekc::test::spec_of;

namespace {

struct Spelling {
    const char* cxx;
    const char* type;
};

// Every C++ spelling the scanner accepts (lib/scan/spec.cpp), with its type.
constexpr Spelling kSpellings[] = {
    {"bool", "bool"},
    {"int8_t", "int8"},
    {"std::int8_t", "int8"},
    {"char", "int8"},
    {"signed char", "int8"},
    {"uint8_t", "uint8"},
    {"std::uint8_t", "uint8"},
    {"unsigned char", "uint8"},
    {"int16_t", "int16"},
    {"std::int16_t", "int16"},
    {"short", "int16"},
    {"short int", "int16"},
    {"signed short", "int16"},
    {"signed short int", "int16"},
    {"uint16_t", "uint16"},
    {"std::uint16_t", "uint16"},
    {"unsigned short", "uint16"},
    {"unsigned short int", "uint16"},
    {"int32_t", "int32"},
    {"std::int32_t", "int32"},
    {"int", "int32"},
    {"signed", "int32"},
    {"signed int", "int32"},
    {"uint32_t", "uint32"},
    {"std::uint32_t", "uint32"},
    {"unsigned int", "uint32"},
    {"unsigned", "uint32"},
    {"int64_t", "int64"},
    {"std::int64_t", "int64"},
    {"long long", "int64"},
    {"long long int", "int64"},
    {"signed long long", "int64"},
    {"signed long long int", "int64"},
    {"uint64_t", "uint64"},
    {"std::uint64_t", "uint64"},
    {"unsigned long long", "uint64"},
    {"unsigned long long int", "uint64"},
    {"float", "float32"},
    {"double", "float64"},
};

std::string one_scalar(const std::string& cxx) {
    return spec_of("// @BE f\nvoid f(BE::Tensor out, " + cxx + " a) {}\n");
}

}  // namespace

TEST_CASE("infer: every scalar spelling, with and without const", "[scanner][infer]") {
    for (const auto& s : kSpellings) {
        INFO(s.cxx);
        const std::string want = std::string("ret attr.a:") + s.type;
        CHECK(one_scalar(s.cxx) == want);
        CHECK(one_scalar(std::string("const ") + s.cxx) == want);
        CHECK(one_scalar(std::string(s.cxx) + " const") == want);
    }
}

TEST_CASE("infer: tensors and the stream", "[scanner][infer]") {
    CHECK(spec_of("// @BE f\nvoid f(const BE::Tensor a, BE::Tensor b, int64_t stream) {}\n") ==
          "arg ret stream");
    // `stream` is the name that makes an int64_t the stream; others are attributes.
    CHECK(spec_of("// @BE f\nvoid f(BE::Tensor b, int64_t streams, const int64_t stream) {}\n") ==
          "ret attr.streams:int64 stream");
}

TEST_CASE("infer: const BE::Tensor& is an input passed by reference", "[scanner][infer]") {
    auto r = scan("// @BE f\nvoid f(const BE::Tensor& a, const BE::Tensor b, BE::Tensor c) {}\n");
    REQUIRE(r.diagnostics.empty());
    REQUIRE(r.functions.size() == 1);
    const auto& t = r.functions[0].tokens;
    REQUIRE(t.size() == 3);
    CHECK(t[0].canonical() == "arg");
    CHECK(t[0].by_reference);
    CHECK_FALSE(t[1].by_reference);
    // An inline spec learns it from the signature too.
    r = scan("// @BE f arg ret\nvoid f(const BE::Tensor &a, BE::Tensor c) {}\n");
    REQUIRE(r.functions.size() == 1);
    CHECK(r.functions[0].tokens[0].by_reference);
}

TEST_CASE("infer: a signature over several lines with comments inside", "[scanner][infer]") {
    const char* text =
        "// @BE f\n"
        "void f(const BE::Tensor x,   // the input, with a comma\n"
        "       /* the output ( */ BE::Tensor y,\n"
        "       float alpha /* scale, */,\n"
        "       // a comment line between parameters\n"
        "       unsigned\n"
        "       int n,\n"
        "       int64_t stream)\n"
        "{\n"
        "}\n";
    CHECK(spec_of(text) == "arg ret attr.alpha:float32 attr.n:uint32 stream");
}

TEST_CASE("infer: default arguments and qualifiers are read past", "[scanner][infer]") {
    CHECK(spec_of("// @BE f\nstatic inline void f(BE::Tensor y, int n = (1, 2), float s = 0.5f) "
                  "noexcept {}\n") == "ret attr.n:int32 attr.s:float32");
    CHECK(spec_of("// @BE f\nextern \"C\" void f(BE::Tensor __restrict__ y) {}\n") == "ret");
}

TEST_CASE("infer: non-const BE::Tensor& cannot receive a buffer", "[scanner][infer]") {
    CHECK(errors("// @BE f\nvoid f(BE::Tensor& x, BE::Tensor y) {}\n") ==
          "k.cu:2:8: error: function 'f': parameter 'BE::Tensor& x' cannot receive a buffer\n"
          "    void f(BE::Tensor& x, BE::Tensor y) {}\n"
          "           ^\n"
          "note: take inputs as 'const BE::Tensor' (or 'const BE::Tensor&') and outputs as "
          "'BE::Tensor', by value\n");
}

TEST_CASE("infer: BE::Tensor* and BE::Tensor&& cannot receive a buffer", "[scanner][infer]") {
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, const BE::Tensor* x) {}\n") ==
          "k.cu:2:22: error: function 'f': parameter 'const BE::Tensor* x' cannot receive a "
          "buffer\n"
          "    void f(BE::Tensor y, const BE::Tensor* x) {}\n"
          "                         ^\n"
          "note: take inputs as 'const BE::Tensor' (or 'const BE::Tensor&') and outputs as "
          "'BE::Tensor', by value\n");
    CHECK(errors("// @BE f\nvoid f(BE::Tensor&& y) {}\n")
              .find("parameter 'BE::Tensor&& y' cannot receive a buffer") != std::string::npos);
}

TEST_CASE("infer: pointers, references and unknown types are not inferable", "[scanner][infer]") {
    const std::string fix =
        "note: pointers, references and other types are not inferable: write the spec inline "
        "with explicit types, e.g. '// @BE <function> arg ret attr.<name>:<type>'\n";
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y,\n       const float* p) {}\n") ==
          "k.cu:3:8: error: function 'f': cannot infer an arg_spec token from parameter "
          "'const float* p'\n"
          "           const float* p) {}\n"
          "           ^\n" +
              fix);
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, const float &r) {}\n") ==
          "k.cu:2:22: error: function 'f': cannot infer an arg_spec token from parameter "
          "'const float& r'\n"
          "    void f(BE::Tensor y, const float &r) {}\n"
          "                         ^\n" +
              fix);
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, size_t n) {}\n") ==
          "k.cu:2:22: error: function 'f': cannot infer an arg_spec token from parameter "
          "'size_t n'\n"
          "    void f(BE::Tensor y, size_t n) {}\n"
          "                         ^\n" +
              fix);
    // Template arguments hold commas that do not split parameters.
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, std::array<int, 3> a) {}\n")
              .find("parameter 'std::array<int,3> a'") != std::string::npos);
}

TEST_CASE("infer: a cudaStream_t parameter is told to be int64_t", "[scanner][infer]") {
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, cudaStream_t stream) {}\n") ==
          "k.cu:2:22: error: function 'f': cannot infer an arg_spec token from parameter "
          "'cudaStream_t stream'\n"
          "    void f(BE::Tensor y, cudaStream_t stream) {}\n"
          "                         ^\n"
          "note: the stream arrives as 'int64_t stream'; cast it with (cudaStream_t)stream "
          "inside the function\n");
}

TEST_CASE("infer: an unnamed scalar has no attribute name", "[scanner][infer]") {
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, float) {}\n") ==
          "k.cu:2:22: error: function 'f': parameter 'float' has no name to call the attribute "
          "by\n"
          "    void f(BE::Tensor y, float) {}\n"
          "                         ^\n"
          "note: name the parameter; its name becomes the attribute name\n");
    // Unnamed tensors are fine: they need no name.
    CHECK(spec_of("// @BE f\nvoid f(const BE::Tensor, BE::Tensor) {}\n") == "arg ret");
}

TEST_CASE("infer: a non-ASCII parameter name is not an attribute name", "[scanner][infer]") {
    CHECK(errors("// @BE f\nvoid f(BE::Tensor y, float \xc3\xa9t\xc3\xa9) {}\n") ==
          "k.cu:2:22: error: function 'f': parameter name '\xc3\xa9t\xc3\xa9' is not an ASCII "
          "C++ identifier\n"
          "    void f(BE::Tensor y, float \xc3\xa9t\xc3\xa9) {}\n"
          "                         ^\n"
          "note: attribute names are emitted into generated C++: use ASCII letters, digits and "
          "'_', not starting with a digit, and not a C++ keyword\n");
}

TEST_CASE("infer: void f(void) and an empty list have no parameters", "[scanner][infer]") {
    // No parameters means no ret, which is its own error.
    CHECK(errors("// @BE f\nvoid f(void) {}\n") ==
          "k.cu:1:1: error: function 'f': no 'ret' token: a function must have at least one "
          "output\n"
          "    // @BE f\n"
          "    ^\n"
          "note: XLA allocates outputs; add a 'ret' token and a BE::Tensor parameter the "
          "function writes its result into\n");
}
