// Inputs and option files bekc must refuse before reading or parsing them
// (lib/prep/inputs, lib/graph/compile_commands): files that are not regular
// files, JSON nested too deep for nlohmann's recursive copies and dumps,
// module names too long for a file name, and compilation databases bekc
// could not merge into without losing entries.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "../helpers/fatal.hpp"
#include "../helpers/temp_dir.hpp"
#include "graph/compile_commands.hpp"
#include "prep/inputs.hpp"
#include "util/error.hpp"

using namespace bekc;
using bekc::test::TempDir;
using bekc::test::write_file;

namespace {

template <typename F>
std::string usage_error(F&& f) {
    return test::fatal_message(std::forward<F>(f));
}

}  // namespace

TEST_CASE("inputs: JSON nesting is measured outside strings", "[inputs][json]") {
    CHECK(json_nesting_excess_line("{\"a\": [[1]]}", 3) == 0);
    CHECK(json_nesting_excess_line("{\"a\": [[1]]}", 2) == 1);
    CHECK(json_nesting_excess_line("[\n[\n[\n]]]", 2) == 3);
    // Brackets inside strings, escaped quotes included, do not nest.
    CHECK(json_nesting_excess_line(R"(["[[[[", "\"[[[[", "\\"])", 1) == 0);
    CHECK(json_nesting_excess_line(R"(["\\", [[]]])", 2) == 1);
    // Closing brackets never take the depth below zero.
    CHECK(json_nesting_excess_line("]]]][[", 1) == 1);
    CHECK(json_nesting_excess_line(std::string(100000, '['), kMaxJsonDepth) == 1);
}

TEST_CASE("inputs: a deeply nested --functions file is a usage error", "[inputs][json]") {
    TempDir dir;
    const fs::path p = dir / "deep.json";
    write_file(p, "{\"f\":\n" + std::string(100000, '[') + std::string(100000, ']') + "}");
    CHECK(usage_error([&] { return read_functions_json(p); }) ==
          p.string() + ":2: error: JSON nesting deeper than 64 levels");
}

TEST_CASE("inputs: paths that are not regular files are refused", "[inputs]") {
    TempDir dir;
    const fs::path fifo = dir / "k.cpp";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(usage_error([&] { return expand_inputs({fifo.string()}); }) ==
          fifo.string() +
              ": error: not a regular file (it is a FIFO); give a kernel source file or a "
              "directory");
    CHECK(usage_error([&] { return expand_inputs({"/dev/zero"}); }) ==
          "/dev/zero: error: not a regular file (it is a device); give a kernel source file or a "
          "directory");
    // In a directory, only regular files are sources.
    write_file(dir / "a.cpp", "\n");
    CHECK(expand_inputs({dir.path().string()}) == std::vector<fs::path>{dir / "a.cpp"});
    CHECK(usage_error([&] { return read_functions_json(fifo); }) ==
          "bekc: error: --functions: cannot read " + fifo.string() + ": it is a FIFO");
}

TEST_CASE("inputs: module names and target prefixes are limited in length", "[inputs]") {
    const std::string ok(kMaxModuleNameLength, 'm');
    const std::string too_long(kMaxModuleNameLength + 1, 'm');
    CHECK(usage_error([&] { return check_name_lengths(ok, "--name", ok); }) == "<no error>");
    CHECK(usage_error([&] { return check_name_lengths("", "--name", ""); }) == "<no error>");
    CHECK(usage_error([&] { return check_name_lengths(too_long, "--name", ""); }) ==
          "bekc: error: --name 'mmmmmmmmmmmmmmmmmmmmmmmm...' is 129 characters long; the limit "
          "is 128 (it names the library, libNAME.so)");
    CHECK(usage_error([&] {
              return check_name_lengths(too_long, "the first input's stem", "");
          }).find("module name (the first input's stem) 'mmm") != std::string::npos);
    CHECK(usage_error([&] {
              return check_name_lengths("m", "--name", too_long);
          }).find("bekc: error: --target-prefix 'mmm") == 0);
    // lib<name>.so and its temporaries stay within NAME_MAX.
    CHECK(std::string("lib" + ok + ".so.tmp.").size() + 64 + 1 + 7 + 1 + 16 <= 255);
}

TEST_CASE("compile_commands: what cannot be merged into is refused", "[compile_commands]") {
    TempDir dir;
    const fs::path cc = dir / "compile_commands.json";
    const std::string keep =
        "; --compile-commands leaves it unchanged: fix it, remove it or name another file";
    auto with = [&](const std::string& text) {
        write_file(cc, text);
        return usage_error([&] { return read_compile_commands(cc); });
    };
    CHECK(read_compile_commands(dir / "missing.json")->empty());
    write_file(cc, " \n");
    CHECK(read_compile_commands(cc)->empty());
    write_file(cc, R"([{"file": "/a.cpp"}, {"directory": "/"}])");
    CHECK(read_compile_commands(cc)->size() == 2);
    CHECK(with("{}") == cc.string() +
                            ": error: not a compilation database: a JSON array of entries was "
                            "expected, the file holds an object" +
                            keep);
    CHECK(with("[{}, 3]") ==
          cc.string() + ": error: not a compilation database: entry 2 is a number, not an object" +
              keep);
    CHECK(with("[{},]").rfind(cc.string() + ": error: not valid JSON: parse error at line 1", 0) ==
          0);
    CHECK(with("[\n" + std::string(1000, '[')) ==
          cc.string() + ":2: error: JSON nesting deeper than 64 levels" + keep);
    CHECK(usage_error([&] { return read_compile_commands(dir.path()); }) ==
          "bekc: error: --compile-commands: cannot read " + dir.path().string() +
              ": it is a directory");
}
