// What the bytes under a cache's root are, part by part, and what removes
// each: `bekc cache prune` says so when it cannot get below the size asked
// for (docs/cache.md, "Maintenance").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/cache_dir.hpp"

namespace bekc {

// Which command removes a part of the cache.
enum class RemovedBy {
    Prune,  // entries, their records and step results, least recently used first
    Clear,  // `bekc cache clear` (runtime trees, memos), which builds write again
    Kept,   // nothing: the marker, the counters, bekc.conf, inline sources, ...
};

struct UsagePart {
    std::string what;   // "runtime headers and objects"
    std::string names;  // what it is in the root: "runtime/", "tools.json, gpus.json"
    std::string fate;   // what removes it, or why it stays
    RemovedBy removed_by = RemovedBy::Kept;
    uint64_t bytes = 0;
};

// Every part of the root that holds bytes, in the table's order (file sizes,
// as CacheDir::tree_bytes counts them). Names bekc does not know are one
// part, "other files".
std::vector<UsagePart> cache_usage(const CacheDir& dir);

}  // namespace bekc
