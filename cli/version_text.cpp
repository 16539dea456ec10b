// `bekc --version`: what a bug report needs. The toolchain is found as a
// build finds it, and asked its version (`--version`, no compile); a tool
// that is missing is "not found", never a failure.
#include <string>

#include "commands.hpp"
#include "run/runner.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/tools.hpp"
#include "util/version.hpp"

namespace bekc::cli {

namespace {

std::string found_tool(const Tool& tool, Runner& runner) {
    return tool.path.string() + " (" + tool_version(tool, runner) + ")";
}

constexpr const char* kNotFound = "not found (bekc doctor says where bekc looked)";

}  // namespace

std::string version_text() {
    ToolLookup lookup = ToolLookup::system();
    ProcessRunner runner;
    std::string commit = kBuildCommit;
    if (commit == "unknown") commit += " (not built from a git checkout)";
    std::string out = std::string("bekc ") + kVersion + "\ncommit: " + commit + "\nnvcc: ";
    if (auto nvcc = find_nvcc(NvccRequest{}, lookup))
        out += found_tool(nvcc->tool, runner) + ", chosen by " + nvcc->how;
    else
        out += kNotFound;
    out += "\nhost compiler: ";
    auto cxx = find_cxx(std::nullopt, lookup);
    out += cxx ? found_tool(*cxx, runner) : kNotFound;
    return out;
}

}  // namespace bekc::cli
