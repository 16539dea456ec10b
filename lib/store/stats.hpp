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
    // Builds that found another machine compiling the same miss and waited
    // for it (remote/lease.hpp); those the wait served (the entry came, a
    // compile saved); the milliseconds they waited; and the milliseconds the
    // other machine's compile took, which they did not spend.
    uint64_t remote_waits = 0, remote_waits_served = 0, wait_ms = 0, saved_ms = 0;
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
// Adds one wait for another machine's compile: whether it served the
// entry, how long it waited, and how long that compile took (0 when not
// served). Appended as one line to stats.remote_waits.tally, without a lock,
// as count_build does.
std::expected<void, Error> count_remote_wait(const CacheDir& cache, bool served, uint64_t wait_ms,
                                             uint64_t saved_ms);
// Resets every counter and records when.
std::expected<void, Error> zero_counters(const CacheDir& cache);

}  // namespace bekc
