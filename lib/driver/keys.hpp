// What goes into the cache keys (SPEC §5; docs/cache.md, "What is in the
// key"). This file alone decides it.
//
// The direct key is known before compiling: bekc's version and embedded
// files, module name and prefix, every input's path and bytes, explicit
// specs, flags, archs, the compilers' identities, and the environment
// variables the compilers and the linker read (driver/compiler_env.hpp). The
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

#include "driver/compiler_env.hpp"
#include "plan/compile_plan.hpp"
#include "plan/inputs.hpp"
#include "store/direct.hpp"
#include "store/key.hpp"

namespace bekc {

struct KeyInputs {
    std::string name, target_prefix;
    const std::vector<SourceFile>* files = nullptr;
    std::optional<Tool> nvcc;
    Tool cxx;
    std::string nvcc_version, cxx_version;
    std::vector<Arch> archs;
    PlanFlags flags;
    std::vector<ExplicitSpec> explicit_specs;
    CompilerEnv env;  // read_compiler_env(process_environment(), ...) in a build
};

KeyBuilder direct_key_builder(const KeyInputs& in);

// What the programs of a build said they read.
struct ReportedDependencies {
    std::vector<std::string> compile;    // the compilers' depfiles
    std::vector<LinkerDependency> link;  // the linker's --dependency-file
    // false: the linker has no --dependency-file; the files the link flags
    // name (and the -l libraries they find) stand in for its list.
    bool link_reported = false;
};

struct DependencySet {
    DirectInputs direct;                                      // key filled in by the caller
    std::vector<std::pair<std::string, std::string>> hashed;  // path, SHA-256 (full key)
    // For --depfile: the user's headers and link inputs, not the system's.
    std::vector<std::string> user_headers;
};

// Sorts what the compilers and the linker read into what is keyed and
// rechecked, and what the toolchain identities cover, and lists the paths
// whose appearance would change the build: a header or library found in a
// directory searched earlier, a header a `__has_include` in the inputs or
// the user's headers asks for. `build_dir` holds the wrappers and objects.
DependencySet classify_dependencies(const ReportedDependencies& reported, const KeyInputs& in,
                                    const fs::path& runtime_include, const fs::path& build_dir);

KeyBuilder full_key_builder(const std::string& direct_key, const DependencySet& deps);

// True for files the toolchain identity covers (CUDA toolkit, host
// compiler's private directories: its headers and its libraries).
bool is_toolchain_header(const fs::path& p, const KeyInputs& in);

}  // namespace bekc
