// The look-up phase of `bekc build` (driver/build.hpp): the local caches
// through the direct record (the user's own, then each read-only cache:
// store/cache_layers.hpp), then, on a miss, the per-key lock in the own cache
// (one process compiles, the others wait) and the local caches again, then
// --remote-cache. A miss ends holding the lock, which publish needs.
#pragma once

#include <optional>
#include <string>

#include "driver/build.hpp"
#include "driver/reporter.hpp"
#include "remote/remote_cache.hpp"
#include "store/cache.hpp"

namespace bekc {

struct LookUp {
    std::optional<Entry> entry;  // a hit, local or remote
    bool remote_hit = false;
    fs::path layer;       // the read-only cache that served the hit; empty: the own cache
    std::string checked;  // a hit by the portable key: what it checked
    // Why the local cache missed (for -v and --json; "--force", "no record",
    // ...): set on a miss and on a hit after one.
    std::string miss_reason;
    // On a miss (and a hit after the wait): the lock on the direct key, held
    // until the entry is published.
    std::optional<FileLock> lock;
    std::optional<RemoteCache> remote;  // --remote-cache, for publish to upload to
};

// What the local caches hold for a direct key: the entry (the direct
// record's, with its integrity checked: store/cache.hpp) of the first that
// holds it, `cache` (the own one) first, then each of
// in.read_only_caches; or why none (the own cache's reason: a miss is an
// answer, not an error). Takes no lock and writes nothing to a read-only
// cache, whose damaged entry is a warning and a miss there. `force`: none.
// `repair`: a corrupt entry of the own cache is removed (Cache::lookup).
struct LocalLookup {
    std::optional<Entry> entry;
    std::string miss_reason;
    fs::path layer;            // the read-only cache of the entry; empty: the own cache
    std::string checked = {};  // a hit by the portable key: what it checked
};
LocalLookup find_local(Cache& cache, const std::string& direct_key, const BuildInputs& in,
                       bool force, const Reporter& report, bool repair = true);

// --remote-cache (or $BEKC_REMOTE_CACHE), when one is configured.
std::optional<RemoteCache> open_remote_cache(const BuildOptions& o, BuildContext& ctx,
                                             const Reporter& report);

// With --force nothing is found, locally or remotely, but the lock is taken.
// A corrupt entry is a miss with a warning; a lock not obtained is fatal.
// With read-only caches, a direct miss looks the portable key up in them
// (driver/portable.hpp) before taking the lock.
LookUp look_up(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
               Cache& cache, BuildContext& ctx, const Reporter& report);

// The local caches for `planned`: find_local, then, with read-only caches,
// their entries by the portable key that run here (driver/portable.hpp).
LocalLookup find_local_or_portable(Cache& cache, const PlannedBuild& planned, const BuildInputs& in,
                                   const BuildOptions& o, BuildContext& ctx, const Reporter& report,
                                   bool repair = true);

}  // namespace bekc
