// What goes into the cache keys (SPEC §5).
//
// The direct key is known before compiling: bekc's version and embedded
// files, module name and prefix, every input's path and bytes, explicit
// specs, flags, archs and the compilers' identities. The full key adds the
// bytes of every header the compilers reported reading, except those of the
// CUDA toolkit and the host compiler's own directories, which the compiler
// identities cover. Direct mode maps direct key -> full key while the
// recorded headers are unchanged.
#pragma once

#include <optional>
#include <string>
#include <vector>

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
};

KeyBuilder direct_key_builder(const KeyInputs& in);

struct DependencySet {
    DirectInputs direct;                                      // key filled in by the caller
    std::vector<std::pair<std::string, std::string>> hashed;  // path, SHA-256 (full key)
    std::vector<std::string> user_headers;                    // for --depfile
};

// Sorts the compilers' dependency lists into what is keyed and rechecked,
// and what the toolchain identities cover. `build_dir` holds the wrappers.
DependencySet classify_dependencies(const std::vector<std::string>& deps, const KeyInputs& in,
                                    const fs::path& runtime_include, const fs::path& build_dir);

KeyBuilder full_key_builder(const std::string& direct_key, const DependencySet& deps);

// True for headers the toolchain identity covers (CUDA toolkit, host
// compiler's private include directories).
bool is_toolchain_header(const fs::path& p, const KeyInputs& in);

}  // namespace bekc
