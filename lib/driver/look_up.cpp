#include "driver/fatal.hpp"
#include "driver/phases.hpp"
#include "portable/portable.hpp"
#include "prep/remote_choice.hpp"
#include "run/interrupt.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

// One cache's answer.
LocalLookup find_in(Cache& cache, const std::string& direct_key, const BaseDir& base,
                    const Reporter& report, bool repair) {
    DirectLookup d = cache.lookup_direct(direct_key, base);
    if (!d.key) return {std::nullopt, d.why_not, {}};
    auto e = cache.lookup(*d.key, repair);
    if (e) return {std::move(*e), "", {}};
    if (e.error().kind == Miss::Kind::Corrupt && cache.read_only())
        report.warn("cache entry " + *d.key + " in the read-only cache " + cache.path().string() +
                    " is corrupt (" + e.error().reason + "); not used, and left as it is");
    else if (e.error().kind == Miss::Kind::Corrupt)
        report.warn("cache entry " + *d.key + " is corrupt (" + e.error().reason + "); rebuilding");
    return {std::nullopt, e.error().reason.empty() ? "entry missing" : e.error().reason, {}};
}

}  // namespace

LocalLookup find_local(Cache& cache, const std::string& direct_key, const BuildInputs& in,
                       bool force, const Reporter& report, bool repair) {
    if (force) return {std::nullopt, "--force", {}};
    LocalLookup own = find_in(cache, direct_key, in.base, report, repair);
    if (own.entry) return own;
    for (const fs::path& root : in.read_only_caches) {
        Cache layer(root, {}, CacheAccess::ReadOnly);
        LocalLookup found = find_in(layer, direct_key, in.base, report, false);
        if (!found.entry) continue;
        found.layer = root;
        return found;
    }
    return own;
}

LocalLookup find_local_or_portable(Cache& cache, const PlannedBuild& planned, const BuildInputs& in,
                                   const BuildOptions& o, BuildContext& ctx, const Reporter& report,
                                   bool repair) {
    LocalLookup local = find_local(cache, planned.direct_key, in, o.force, report, repair);
    // A hit of the own cache uses its portable record too, for the size
    // limit's least-recently-used order: a module hit every day keeps it.
    if (local.entry && local.layer.empty() && is_valid_key(planned.portable_key))
        cache.dir().touch(CacheLayout::portable_record(planned.portable_key), false);
    if (local.entry || o.force || in.read_only_caches.empty()) return local;
    PortableLookup p = find_portable(cache, planned.portable_key, in, o, false, ctx, report);
    if (!p.entry) return local;
    return {std::move(p.entry), "", std::move(p.layer), std::move(p.checked)};
}

LookUp look_up(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
               Cache& cache, BuildContext& ctx, const Reporter& report) {
    LookUp found;
    auto take = [&](LocalLookup& local) {
        found.entry = std::move(local.entry);
        found.layer = std::move(local.layer);
        found.checked = std::move(local.checked);
    };
    LocalLookup local = find_local_or_portable(cache, planned, in, o, ctx, report);
    if (local.entry) {
        take(local);
        return found;
    }
    found.miss_reason = local.miss_reason;
    report.info("cache miss: " + found.miss_reason);

    // One compile per direct key: others building the same inputs wait here
    // and then find the entry.
    const std::string& direct_key = planned.direct_key;
    auto lock = cache.lock(CacheLayout::lock(direct_key));
    throw_if_interrupted();
    if (!lock) fatal(std::move(lock.error()));
    found.lock.emplace(std::move(*lock));
    local = find_local(cache, direct_key, in, o.force, report);
    if (local.entry) {
        take(local);
        return found;
    }
    found.miss_reason = local.miss_reason;
    found.remote = open_remote_cache(o, ctx, report);
    if (found.remote && !o.force) {
        if (auto e = found.remote->fetch_or_wait(cache, direct_key, in.base)) {
            found.miss_reason = "local miss, remote hit";
            found.remote_hit = true;
            keep_under_limit(cache, *e, direct_key, ctx.env, report);
            found.entry = std::move(*e);
            return found;
        }
    }
    // Ctrl-C during the remote lookup: compile nothing.
    throw_if_interrupted();
    return found;
}

}  // namespace bekc
