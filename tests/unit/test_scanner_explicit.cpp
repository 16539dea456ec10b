// Explicit specs (SPEC §1.4): parsing `--function`, and specs that replace
// the annotations of a file.
#include <catch2/catch.hpp>
#include <string>

#include "test_scanner_util.hpp"

using bekc::ExplicitSpec;
using bekc::parse_function_option;
using bekc::test::errors;
using bekc::test::function_option;
using bekc::test::scan;
using bekc::test::specs;

namespace {

std::string option_error(std::string_view value) {
    std::string error;
    auto spec = parse_function_option(value, error);
    return spec ? "<parsed>" : error;
}

std::string tokens_of(const ExplicitSpec& spec) {
    std::string out;
    for (const auto& t : spec.tokens) out += (out.empty() ? "" : "|") + t.text;
    return out;
}

const char* kFile =
    "// @BE g arg ret\n"
    "void g(const BE::Tensor x, BE::Tensor y) {}\n"
    "void f(const BE::Tensor x, BE::Tensor y, float alpha, int64_t stream) {}\n";

}  // namespace

TEST_CASE("parse_function_option (--function): name and tokens", "[scanner][explicit]") {
    ExplicitSpec s = function_option("vector_add=arg,arg,ret,stream");
    CHECK(s.name == "vector_add");
    CHECK(tokens_of(s) == "arg|arg|ret|stream");
    CHECK(s.origin == "--function");
    // Spaces work as separators too, and around the name.
    s = function_option(" scale = args rets  attrs.k:float32");
    CHECK(s.name == "scale");
    CHECK(tokens_of(s) == "args|rets|attrs.k:float32");
    // No tokens: inferred from the signature.
    CHECK(function_option("f").tokens.empty());
    CHECK(function_option("f=").tokens.empty());
}

TEST_CASE("parse_function_option (--function): bad names", "[scanner][explicit]") {
    CHECK(option_error("=arg,ret") ==
          "--function '=arg,ret': no function name before '=' (expected 'name=arg,arg,ret')");
    CHECK(option_error("") ==
          "--function '': no function name before '=' (expected "
          "'name=arg,arg,ret')");
    CHECK(option_error("2f=arg") ==
          "--function '2f=arg': '2f' is not an ASCII C++ identifier (expected 'name=arg,arg,ret')");
    CHECK(option_error("my-kernel=ret") ==
          "--function 'my-kernel=ret': 'my-kernel' is not an "
          "ASCII C++ identifier (expected 'name=arg,arg,ret')");
    CHECK(option_error("for=ret") ==
          "--function 'for=ret': 'for' is a C++ keyword (expected 'name=arg,arg,ret')");
}

TEST_CASE("explicit specs replace the annotations", "[scanner][explicit]") {
    // Only f is exported; g's annotation is not consulted. Functions from
    // explicit specs report the line of their signature.
    CHECK(specs(kFile, "k.cu", {function_option("f=arg,ret,attr.alpha:float32,stream")}) ==
          "f(arg, ret, attr.alpha:float32, stream) @3\n");
    // Inferred, or with bare attributes resolved from the signature.
    CHECK(specs(kFile, "k.cu", {function_option("f")}) ==
          "f(arg, ret, attr.alpha:float32, stream) @3\n");
    CHECK(specs(kFile, "k.cu", {function_option("f=arg ret attr.alpha ctx.stream")}) ==
          "f(arg, ret, attr.alpha:float32, stream) @3\n");
    // Several, in the order given.
    CHECK(specs(kFile, "k.cu", {function_option("g"), function_option("f")}) ==
          "g(arg, ret) @2\nf(arg, ret, attr.alpha:float32, stream) @3\n");
    // A file without annotations is fine with explicit specs.
    CHECK(specs("void h(BE::Tensor y) {}\n", "k.cu", {function_option("h")}) == "h(ret) @1\n");
}

TEST_CASE("explicit specs: which ones this file resolved", "[scanner][explicit]") {
    auto r = scan(kFile, "k.cu", {function_option("f"), function_option("elsewhere=ret")});
    CHECK(r.diagnostics.empty());
    CHECK(r.explicit_found == std::vector<std::string>{"f"});
    // A function defined in no file is reported by scan_inputs, not here.
    CHECK(r.functions.size() == 1);
}

TEST_CASE("explicit specs: errors", "[scanner][explicit]") {
    CHECK(errors(kFile, "k.cu", {function_option("f=arg,ret,attr.alpha:flt,stream")}) ==
          "--function: error: function 'f': unknown attribute type 'flt' in 'attr.alpha:flt'\n"
          "note: attribute types are: bool, int8, uint8, int16, uint16, int32, uint32, int64, "
          "uint64, float32, float64, float16, bfloat16\n");
    ExplicitSpec from_json{"f", {{"arg", 0}, {"agr", 0}}, "specs.json"};
    CHECK(errors(kFile, "k.cu", {from_json}) ==
          "specs.json: error: function 'f': unknown arg_spec token 'agr'\n"
          "note: did you mean 'arg'? tokens are 'arg', 'ret', 'stream' and 'attr.<name>' or "
          "'attr.<name>:<type>' (aliases: 'args', 'rets', 'ctx.stream', 'attrs.<name>')\n");
    // Rules and the signature check are reported at the signature.
    CHECK(errors(kFile, "k.cu", {function_option("f=arg,ret,attr.alpha:float32")}) ==
          "k.cu:3:1: error: function 'f': the arg_spec has 3 tokens but the signature has 4 "
          "parameters\n"
          "    void f(const BE::Tensor x, BE::Tensor y, float alpha, int64_t stream) {}\n"
          "    ^\n"
          "note: the spec lists one token per C++ parameter, in order\n");
    CHECK(errors(kFile, "k.cpp", {function_option("f")}) ==
          "k.cpp:3:1: error: function 'f': 'stream' in a CPU (.cpp) build\n"
          "    void f(const BE::Tensor x, BE::Tensor y, float alpha, int64_t stream) {}\n"
          "    ^\n"
          "note: CPU handlers have no CUDA stream: remove the 'stream' token and the int64_t "
          "parameter, or compile the file as .cu\n");
}
