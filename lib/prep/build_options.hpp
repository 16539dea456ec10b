// Everything `bekc build` accepts (SPEC §4), as plain data. The CLI fills it
// (prep/build_args.hpp defines the options and writes a value back as an
// argument vector); the Python compatibility layer reaches it through the
// same flags.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "plan/flags.hpp"

namespace bekc {

struct BuildOptions {
    std::vector<std::string> inputs;
    std::string name;                        // default: the first input's stem
    std::string target_prefix;               // default: name
    CompileFlags flags;                      // -O, --fast-math, --std, -I, -D, --cuda-flag, ...
    std::string arch = "auto";               // list, "native" or "auto"
    std::optional<std::string> xla_include;  // --xla-include, else $BEKC_XLA_INCLUDE, else jaxlib
    std::vector<std::string> functions;      // --function values
    std::string functions_json;              // --functions
    bool no_cuda_graph = false;
    bool force = false;
    // No warning for .cu exports without a stream parameter.
    bool allow_default_stream = false;
    std::optional<std::string> cache_dir, output_dir, depfile, compile_commands, nvcc, cxx;
    // --trace FILE: where the build's trace goes (run/trace.hpp).
    std::optional<std::string> trace;
    // Which nvcc (toolchain/nvcc_search.hpp): --nvcc-prefer, --brainevent-nvcc,
    // --python-site; --nvcc is `nvcc` above.
    std::optional<std::string> nvcc_prefer, brainevent_nvcc;
    std::vector<std::string> python_sites;
    std::optional<std::string> launcher;      // --launcher, else $BEKC_LAUNCHER
    std::optional<std::string> remote_cache;  // --remote-cache URL, else $BEKC_REMOTE_CACHE
    // --read-only-caches DIR[:DIR...], else $BEKC_READ_ONLY_CACHES
    // (store/cache_layers.hpp); "" turns them off.
    std::optional<std::string> read_only_caches;
    bool remote_read_only = false;
    int jobs = 0;  // 0: one per core
    // `bekc build <package>`: what a package's own defect (a header it does
    // not ship) is, "warn" or "error" (--package-defects).
    std::string package_defects = "warn";
    bool json = false, verbose = false, quiet = false, dry_run = false, explain_key = false;

    bool operator==(const BuildOptions&) const = default;
};

// -j, or one job per core.
inline int jobs_wanted(const BuildOptions& o) {
    return o.jobs > 0 ? o.jobs
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace bekc
