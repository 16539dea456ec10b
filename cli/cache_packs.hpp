// `bekc cache packs`: the read-only caches a build looks in, in order, the
// installed packs among them (docs/cli.md, "cache"; docs/cache.md, "Packs").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/settings.hpp"

namespace bekc::cli {

struct PacksOptions {
    std::optional<std::string> read_only_caches;
    std::vector<std::string> python_sites;
    std::optional<std::string> remove;
    bool json = false, verify = false;
};

// Lists, verifies (--verify: exit 1 when an entry is damaged) or removes
// (--remove NAME: exit 2 for a pack pip installed) the read-only layers.
int cache_packs(const std::optional<std::string>& cache_dir, const PacksOptions& o,
                const Settings& settings);

}  // namespace bekc::cli
