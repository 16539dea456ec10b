// What goes into the cache keys (SPEC §5; docs/cache.md, "What is in the
// key"). This file alone decides it.
//
// The direct key is known before compiling: bekc's version and embedded
// files, every input's path and bytes, the compilers' identities, the
// environment variables the compilers and the linker read
// (toolchain/compiler_env.hpp), and every step of the build graph with its
// directories normalised, so flags, archs, names and specs enter through the
// commands and wrappers they change. The
// full key adds the bytes of every file the compilers and the linker reported
// reading, and of the headers `__has_include` found, except those of the CUDA
// toolkit and the host compiler's own directories, which the compiler
// identities cover. Direct mode maps direct key -> full key while those files
// are unchanged and no file has appeared where a compiler or the linker would
// have found it first (must_not_exist).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/build_inputs.hpp"
#include "driver/build_options.hpp"
#include "plan/compile_plan.hpp"
#include "store/direct.hpp"
#include "store/key.hpp"

namespace bekc {

// The direct key: bekc's version and embedded files, the inputs' paths and
// bytes, the tools' identities and versions, the environment they read, and
// every step of key_graph(in) (driver/plan_build.hpp): the normalised
// commands and the files bekc writes. A new option reaches the key through
// the command it changes.
KeyBuilder direct_key_builder(const BuildInputs& in);

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
// the user's headers asks for. `build_dir` holds the wrappers and objects.
DependencySet classify_dependencies(const ReportedDependencies& reported, const BuildInputs& in,
                                    const fs::path& runtime_include, const fs::path& build_dir);

// The portable key: what the direct key holds less the toolchain (the tools'
// identities and paths, and the arch list, which a hit checks against the
// machine instead: driver/portable.hpp): bekc's version and embedded files,
// the module's name, the inputs' bytes and paths, the files the flags name,
// the options that decide the library (driver/build_args.hpp,
// library_options) and the compilers' environment. Known without finding a
// compiler. Paths count relative to portable_base(in).
KeyBuilder portable_key_builder(const BuildInputs& in, const BuildOptions& o);

// What a portable key's paths are relative to: $BEKC_BASE_DIR when set, else
// the Python site directory (site-packages, dist-packages) the first input
// is installed under, so that a package's kernels match wherever it is
// installed; else none. Inline sources in the own cache count relative to
// it (`<cache>/src/...`).
BaseDir portable_base(const BuildInputs& in);

// A build's direct record as its portable record keeps it: the files the
// toolchain's identity covers in the direct key (the C library's headers
// and libraries, with the compiler's and the toolkit's, already left out)
// are left out too, with the places under them that must stay absent; a
// machine without a compiler has none of them, and its own C library is
// checked by version instead (plan/target.hpp).
DirectInputs portable_dependencies(const DirectInputs& direct, const BuildInputs& in);

// Paths under `base` count relative to it.
KeyBuilder full_key_builder(const std::string& direct_key, const DependencySet& deps,
                            const BaseDir& base = {});

// True for files the toolchain identity covers (CUDA toolkit, host
// compiler's private directories: its headers and its libraries).
bool is_toolchain_header(const fs::path& p, const BuildInputs& in);

}  // namespace bekc
