#include "store/cache_export.hpp"

#include <algorithm>

#include "store/direct_record.hpp"
#include "store/layout.hpp"

namespace bekc {

std::vector<PortableBuild> portable_builds(const Cache& cache) {
    std::vector<PortableBuild> out;
    const CacheDir& dir = cache.dir();
    auto fans = dir.list(CacheLayout::portable());
    if (!fans) return out;
    for (const auto& fan : *fans) {
        if (!fan.is_dir || !is_hex(fan.name, 2)) continue;
        auto files = dir.list(CacheLayout::portable() / fan.name);
        if (!files) continue;
        for (const auto& f : *files) {
            std::string pk = CacheLayout::key_of(fan.name, f.name, CacheLayout::kRecordExtension);
            if (pk.empty() || !f.is_regular) continue;
            for (const auto& r :
                 read_direct_records(dir, CacheLayout::portable() / fan.name / f.name))
                if (dir.stat(CacheLayout::entry(r.key))) out.push_back({pk, r.key});
        }
    }
    std::sort(out.begin(), out.end(), [](const PortableBuild& a, const PortableBuild& b) {
        return a.portable_key + a.key < b.portable_key + b.key;
    });
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

namespace {

std::expected<void, Error> copy_entry(const CacheDir& from, const CacheDir& to,
                                      const std::string& key) {
    const fs::path rel = CacheLayout::entry(key);
    if (to.stat(rel)) return {};
    auto files = from.list(rel);
    if (!files) return std::unexpected(files.error());
    if (files->empty())
        return fail(ErrorKind::Cache, "entry " + key + " is missing from " + from.root().string());
    // Into tmp/ first, then one rename: a reader of `to` never sees half.
    const fs::path staging = CacheLayout::staging(key);
    if (auto made = to.make_dir(staging); !made) return made;
    for (const auto& f : *files) {
        if (!f.is_regular)
            return fail(ErrorKind::Cache,
                        "entry " + key + " holds " + f.name + ", which is not a regular file");
        auto bytes = from.read(rel / f.name);
        if (!bytes) return std::unexpected(bytes.error());
        if (auto w = to.write(staging / f.name, *bytes); !w) return w;
    }
    return to.rename(staging, rel);
}

}  // namespace

std::expected<void, Error> copy_build(const Cache& from, const Cache& to, const PortableBuild& b) {
    if (auto made = to.ensure_created(); !made) return made;
    if (auto copied = copy_entry(from.dir(), to.dir(), b.key); !copied) return copied;
    const fs::path rel = CacheLayout::portable_record(b.portable_key);
    std::vector<DirectRecord> kept = read_direct_records(to.dir(), rel);
    for (auto& r : read_direct_records(from.dir(), rel)) {
        bool known = std::any_of(kept.begin(), kept.end(),
                                 [&](const DirectRecord& k) { return k.key == r.key; });
        if (r.key == b.key && !known) kept.push_back(std::move(r));
    }
    if (kept.empty())
        return fail(ErrorKind::Cache,
                    "no portable record of entry " + b.key + " in " + from.path().string());
    return write_direct_records(to.dir(), rel, kept);
}

}  // namespace bekc
