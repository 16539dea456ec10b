// What the compilers and the linker of a build read, sorted: the files the
// full key and the direct record hold (with their digests), those the
// toolchain's identity covers, and the places where a new file would change
// the build (docs/cache.md, "What is in the key"). graph/keys.hpp hashes the
// result into the full key.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/compile_plan.hpp"
#include "prep/build_inputs.hpp"
#include "store/direct.hpp"
#include "util/error.hpp"

namespace bekc {

// What the programs of a build said they read.
struct ReportedDependencies {
    std::vector<std::string> compile;    // the compilers' depfiles
    std::vector<LinkerDependency> link;  // the linker's --dependency-file
    // false: the linker has no --dependency-file; the files the link flags
    // name (and the -l libraries they find) stand in for its list.
    bool link_reported = false;
};

struct DependencySet {
    // Key filled in by the caller. Each file is read once, here: its
    // dependencies carry the stat taken before that read and the XXH3-128
    // of the bytes keyed, which the direct record and changed-during-build
    // use instead of looking again.
    DirectInputs direct;
    std::vector<std::pair<std::string, std::string>> hashed;  // path, SHA-256 (full key)
    // For --depfile: the user's headers and link inputs, not the system's.
    std::vector<std::string> user_headers;
    // The first keyed file whose stat moved while it was read: it is being
    // written now, and what was keyed may not be what was compiled.
    std::optional<std::string> changed_while_read;
    // Paths that would shadow a dependency and exist now, so they are not in
    // must_not_exist: one created during the build may have appeared after
    // the compiler passed its directory (driver/build.cpp looks at when).
    std::vector<fs::path> present_shadows;
};

// Sorts what the compilers and the linker read into what is keyed and
// rechecked, and what the toolchain identities cover, and lists the paths
// whose appearance would change the build: a header or library found in a
// directory searched earlier, a header a `__has_include` in the inputs or
// the user's headers asks for. `multiarch`: the host compiler's triplet
// ("x86_64-linux-gnu", toolchain/tool_versions.hpp), which names its system
// include and library directories, asked on a miss only; "" when it has
// none. `build_dir` holds the wrappers and objects. A dependency that cannot
// be read is a Source error.
std::expected<DependencySet, Error> classify_dependencies(const ReportedDependencies& reported,
                                                          const BuildInputs& in,
                                                          const std::string& multiarch,
                                                          const fs::path& runtime_include,
                                                          const fs::path& build_dir);

// A build's direct record as its portable record keeps it: the files the
// toolchain's identity covers in the direct key (the C library's headers
// and libraries, with the compiler's and the toolkit's, already left out)
// are left out too, with the places under them that must stay absent; a
// machine without a compiler has none of them, and its own C library is
// checked by version instead (plan/target.hpp). `multiarch` as for
// classify_dependencies.
DirectInputs portable_dependencies(const DirectInputs& direct, const BuildInputs& in,
                                   const std::string& multiarch);

// True for files the toolchain identity covers (CUDA toolkit, host
// compiler's private directories: its headers and its libraries).
bool is_toolchain_header(const fs::path& p, const BuildInputs& in);

}  // namespace bekc
