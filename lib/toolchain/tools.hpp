// Finding the host C++ compiler and the launcher (SPEC §4; nvcc is found by
// toolchain/nvcc_search.hpp) and naming tools for the cache key without
// running them: path, size and mtime identify a binary.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>

#include "plan/tool.hpp"
#include "util/env.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

// Resolves a program name through PATH; tests pass a stub.
using FindExecutable = std::function<std::optional<fs::path>(const std::string& name)>;
// Whether a path is an executable file; tests pass a stub.
using IsExecutable = std::function<bool(const fs::path&)>;

struct ToolLookup {
    EnvLookup env;
    FindExecutable find;
    IsExecutable executable;

    // The real environment, PATH and filesystem.
    static ToolLookup system();
};

// A tool named by the user (--cxx, $BEKC_NVCC, ...): a path, or a name on
// PATH; nullopt when it is not an executable.
std::optional<fs::path> resolve_named(const std::string& value, const ToolLookup& lookup);

// The host compiler from --cxx, $CXX, then c++, g++, clang++ on PATH.
std::expected<Tool, Error> find_cxx(const std::optional<std::string>& flag,
                                    const ToolLookup& lookup);

// The compiler launcher from --launcher, else $BEKC_LAUNCHER: a name on PATH
// (ccache, sccache) or a path. nullopt when neither is set; a Toolchain error
// when the named launcher does not exist.
std::expected<std::optional<fs::path>, Error> find_launcher(const std::optional<std::string>& flag,
                                                            const ToolLookup& lookup);

// Fills size and mtime; a Toolchain error when the file vanished.
std::expected<Tool, Error> identify_tool(const fs::path& path);

class Runner;

// The version of `TOOL --version` ("13.0.48", "12.2.0"), "unknown" when it
// fails; runs the tool through `runner`, so the driver asks once per tool
// identity (toolchain/tool_versions.hpp).
std::string tool_version(const Tool& tool, Runner& runner);

// The version number in a `--version` output.
std::string parse_tool_version(const std::string& output);

// The host compiler's multiarch triplet (`-print-multiarch`:
// "x86_64-linux-gnu", "aarch64-linux-gnu"), which names its system include
// and library directories on Debian and Ubuntu; "" when it has none.
std::string tool_multiarch(const Tool& cxx, Runner& runner);

}  // namespace bekc
