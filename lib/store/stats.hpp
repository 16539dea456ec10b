// Hit and miss counters, as `ccache -s` shows them. Each build appends one
// byte to its counter's tally (<cache>/stats.<counter>.tally), taking no
// lock, so a hit costs one small write; a tally of 4096 is folded into
// <cache>/stats.json under locks/stats.lock (read, added, replaced by
// rename), and a count can be lost only when an append lands between a
// fold's read and its truncation. `bekc cache stats --zero` resets them.
#pragma once

#include <cstdint>
#include <expected>
#include <string>

#include "store/cache_dir.hpp"
#include "util/error.hpp"

namespace bekc {

struct BuildCounters {
    uint64_t local_hits = 0, remote_hits = 0, misses = 0, errors = 0;
    int64_t zeroed_at = 0;  // seconds since the epoch; 0: never zeroed
};

// In the order of the counters in stats.json.
enum class BuildCount { LocalHit, RemoteHit, Miss, Error };

// Zero counters when the file is missing or damaged.
BuildCounters read_counters(const CacheDir& cache);
// Adds one build. The cache must exist already (the caller checked it).
// Never waits: past 4096 counts it folds them into stats.json only when the
// counters' lock is free.
std::expected<void, Error> count_build(const CacheDir& cache, BuildCount what);
// Resets every counter and records when.
std::expected<void, Error> zero_counters(const CacheDir& cache);

}  // namespace bekc
