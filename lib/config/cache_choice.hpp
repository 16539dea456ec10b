// Which cache a command names and which one a miss builds into, for the
// current settings: what bekc's Python package asks the binary for
// (`bekc config --json`'s "cache", and libbekc_lookup.so's
// bekc_lookup_cache_v1), so that it writes inline sources to, and clears,
// the cache the binary uses (docs/cache.md, "Hits inside the Python process").
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

struct CacheChoice {
    // The cache --cache-dir, $BEKC_CACHE_DIR, cache_dir in bekc.conf or the
    // default names: what `bekc cache path` prints and `cache clear` clears.
    fs::path dir;
    // Where a miss builds (store/cache_layers.hpp, resolve_own_cache): `dir`,
    // or the default cache when `dir` is a bekc cache this user cannot write.
    fs::path own;
    std::optional<fs::path> demoted;  // `dir`, in that case
    // The environment variables the choice read, sorted: the same values
    // give the same choice as long as the bekc.conf files stay as they are.
    std::vector<std::string> variables;
};

// The choice for `cache_dir_flag` (--cache-dir) with the bekc.conf files
// read over `process_env`. A bekc.conf that cannot be read or has errors is
// a Usage error holding the file's lines.
std::expected<CacheChoice, Error> choose_cache(const std::optional<std::string>& cache_dir_flag,
                                               const EnvLookup& process_env);

// {"dir": ..., "own": ..., "demoted": ... or null, "variables": [...]}.
nlohmann::ordered_json cache_choice_json(const CacheChoice& choice);

}  // namespace bekc
