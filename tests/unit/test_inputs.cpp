// The inputs stage (lib/prep/inputs): expanding files and directories,
// scanning them with the rules that span files, and reading --functions.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../helpers/fatal.hpp"
#include "../helpers/temp_dir.hpp"
#include "prep/inputs.hpp"
#include "util/error.hpp"

using namespace bekc;
using bekc::test::TempDir;
using bekc::test::write_file;

namespace {

template <typename F>
std::string fatal(F&& f) {
    return test::fatal_message(std::forward<F>(f));
}

std::vector<std::string> file_names(const std::vector<fs::path>& paths) {
    std::vector<std::string> out;
    for (const auto& p : paths) out.push_back(p.filename().string());
    return out;
}

const char* kF = "// @BE f\nvoid f(const BE::Tensor x, BE::Tensor y) {}\n";

}  // namespace

TEST_CASE("inputs: directories expand to their sources, sorted", "[inputs]") {
    TempDir dir;
    for (const char* n : {"b.cu", "a.cpp", "c.cc", "d.cxx", "notes.txt", "e.cuh", "sub/z.cu"})
        write_file(dir / n, "\n");
    fs::create_directories(dir / "dir.cu");  // a directory, whatever its name
    auto found = expand_inputs({(dir / "").string(), (dir / "sub/z.cu").string()}).value();
    CHECK(file_names(found) == std::vector<std::string>{"a.cpp", "b.cu", "c.cc", "d.cxx", "z.cu"});
}

TEST_CASE("inputs: bad inputs are usage errors", "[inputs]") {
    TempDir dir;
    write_file(dir / "k.h", "\n");
    fs::create_directories(dir / "empty");
    const std::string k = (dir / "k.h").string(), empty = (dir / "empty").string(),
                      missing = (dir / "missing.cu").string();
    CHECK(fatal([&] { return expand_inputs({k}); }) ==
          k + ": error: not a kernel source (expected .cu, .cpp, .cc or .cxx)");
    CHECK(fatal([&] { return expand_inputs({empty}); }) ==
          empty + ": error: directory has no .cu, .cpp, .cc or .cxx file");
    CHECK(fatal([&] { return expand_inputs({missing}); }) ==
          missing + ": error: no such file or directory");
}

TEST_CASE("inputs: f in one input and f_nograph in another clash at the second's annotation",
          "[inputs]") {
    TempDir dir;
    const std::string f =
        "#include \"brainevent/common.h\"\n// @BE f\nvoid f(const BE::Tensor x, BE::Tensor y) {}\n";
    const std::string g =
        "\n// @BE f_nograph\nvoid f_nograph(const BE::Tensor x, BE::Tensor y) {}\n";
    write_file(dir / "a.cpp", f);
    write_file(dir / "b.cpp", g);
    const std::string a = (dir / "a.cpp").string(), b = (dir / "b.cpp").string();
    ScannedInputs s = scan_inputs({a, b}, {}).value();
    CHECK(render_all(s.diagnostics) ==
          b +
              ":2: error: exported functions 'f' and 'f_nograph' would both define the handler "
              "symbol 'bekc_ffi_f_nograph'\n"
              "    // @BE f_nograph\n"
              "note: 'f' is exported at " +
              a +
              ":2, and bekc names its variant without the "
              "command-buffer trait 'bekc_ffi_f_nograph'; rename 'f_nograph'\n");
    CHECK(s.files[1].functions.empty());
    // In the other order the clash is the same, reported at f_nograph's annotation.
    s = scan_inputs({b, a}, {}).value();
    REQUIRE(s.diagnostics.size() == 1);
    CHECK(render_all(s.diagnostics).rfind(b + ":2: error:", 0) == 0);
    // `bekc inspect` reports each file on its own: no clash.
    CHECK(scan_inputs({a, b}, {}, InputsAre::Independent).value().diagnostics.empty());
}

TEST_CASE("inputs: a function exported by two inputs", "[inputs]") {
    TempDir dir;
    write_file(dir / "a.cu", kF);
    write_file(dir / "b.cpp", std::string("\n") + kF);
    const std::string a = (dir / "a.cu").string(), b = (dir / "b.cpp").string();
    ScannedInputs s = scan_inputs({a, b}, {}).value();
    CHECK(render_all(s.diagnostics) == b +
                                           ":2: error: function 'f' is exported by two inputs\n"
                                           "    // @BE f\n"
                                           "note: it is also exported at " +
                                           a +
                                           ":1; a module's target names must be "
                                           "unique: rename one\n");
    REQUIRE(s.files.size() == 2);
    CHECK(s.files[0].cuda);
    CHECK_FALSE(s.files[1].cuda);
    CHECK(s.files[0].functions.size() == 1);
    CHECK(s.files[1].functions.empty());
    // `bekc inspect` reports each file on its own.
    s = scan_inputs({a, b}, {}, InputsAre::Independent).value();
    CHECK(s.diagnostics.empty());
    CHECK(s.files[1].functions.size() == 1);
}

TEST_CASE("inputs: explicit specs across files", "[inputs]") {
    TempDir dir;
    write_file(dir / "a.cu", "void f(const BE::Tensor x, BE::Tensor y) {}\n");
    write_file(dir / "b.cu", "void g(BE::Tensor y) {}\n");
    const std::vector<fs::path> both = {dir / "a.cu", dir / "b.cu"};
    std::string err;
    auto f = *parse_function_option("f", err), g = *parse_function_option("g=ret", err);
    ScannedInputs s = scan_inputs(both, {f, g}).value();
    CHECK(s.diagnostics.empty());
    CHECK(s.files[0].functions.size() == 1);
    CHECK(s.files[1].functions.size() == 1);
    // A spec that no input defines.
    auto h = *parse_function_option("h=ret", err);
    CHECK(render_all(scan_inputs(both, {f, h}).value().diagnostics) ==
          "--function: error: function 'h' is not defined in any input\n"
          "note: bekc looks for 'void h(...)' in each input, written out or made by a macro "
          "#defined in the same file\n");
    // Two specs for one function: the first is used, the second reported.
    ExplicitSpec again{"f", {{"arg", 0}, {"ret", 0}}, "specs.json"};
    s = scan_inputs(both, {f, again}).value();
    CHECK(render_all(s.diagnostics) ==
          "specs.json: error: function 'f' is given two explicit specs\n"
          "note: the other one is from --function; keep one of them\n");
    CHECK(s.files[0].functions.size() == 1);
}

TEST_CASE("inputs: --functions JSON", "[inputs]") {
    TempDir dir;
    write_file(dir / "s.json",
               R"({"zeta": ["args", "rets"], "alpha": [], "mid": ["attr.k:int32"]})");
    auto specs = read_functions_json(dir / "s.json").value();
    REQUIRE(specs.size() == 3);
    // The file's order is kept.
    CHECK(specs[0].name == "zeta");
    CHECK(specs[1].name == "alpha");
    CHECK(specs[1].tokens.empty());
    CHECK(specs[2].tokens.size() == 1);
    CHECK(specs[2].tokens[0].text == "attr.k:int32");
    CHECK(specs[0].origin == (dir / "s.json").string());
}

TEST_CASE("inputs: --functions JSON errors", "[inputs]") {
    TempDir dir;
    const fs::path p = dir / "s.json";
    const std::string at = p.string() + ": error: ";
    const std::string shape = "; expected {\"name\": [\"arg\", \"ret\", ...], ...}";
    auto with = [&](const std::string& text) {
        write_file(p, text);
        return fatal([&] { return read_functions_json(p); });
    };
    CHECK(fatal([&] { return read_functions_json(dir / "missing.json"); }) ==
          "bekc: error: --functions: cannot read " + (dir / "missing.json").string() +
              ": No such file or directory");
    CHECK(with("{\"f\": [\"arg\",]}")
              .rfind(at + "not valid JSON: parse error at line 1, column 14: ", 0) == 0);
    CHECK(with("[\"f\"]") == at + "not a JSON object" + shape);
    CHECK(with("{}") == at + "names no function" + shape);
    CHECK(with("{\"my-f\": []}") == at + "function name 'my-f' is not an ASCII C++ identifier "
                                         "(names are emitted into generated code)");
    CHECK(with("{\"int\": []}") ==
          at + "function name 'int' is a C++ keyword (names are emitted into generated code)");
    CHECK(with("{\"f\": \"arg ret\"}") == at + "the spec of 'f' is not a list of tokens" + shape +
                                              " ([] infers the spec from the signature)");
    CHECK(with("{\"f\": [\"arg\", 1]}") ==
          at + "the spec of 'f' has a token that is not a string: 1" + shape);
}
