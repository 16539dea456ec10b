// `bekc build`: scan -> codegen -> plan -> run -> store, with the cache in
// front. See docs/ARCHITECTURE.md for the stages.
#pragma once

#include <string>
#include <vector>

#include "driver/build_options.hpp"
#include "util/fs.hpp"

namespace bekc {

struct BuildResult {
    int exit_code = 0;
    fs::path manifest;  // the one the user should load (cache, or -o copy)
    fs::path library;
    bool cache_hit = false;
    bool remote_hit = false;  // the entry came from --remote-cache
    std::vector<std::string> targets;
    double seconds_total = 0, seconds_compile = 0;
    std::string miss_reason;  // why the direct lookup missed, for -v and --json
};

// Runs the whole build; diagnostics and progress go to stderr, and the
// caller prints the result to stdout.
BuildResult run_build(const BuildOptions& options);

// The cache root from --cache-dir, $BEKC_CACHE_DIR, $XDG_CACHE_HOME/bekc or ~/.cache/bekc.
fs::path resolve_cache_root(const std::optional<std::string>& flag);

}  // namespace bekc
