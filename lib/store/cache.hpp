// The build cache: content-addressed entries shared by many processes, and
// possibly by many machines through a shared filesystem, or several users.
// Layout in store/layout.hpp and docs/cache.md; integrity in store/entry.hpp
// and store/seal.hpp; direct mode in store/direct.hpp.
//
// Guarantees:
//  - Readers never see a partial entry: an entry is built in tmp/ (same
//    filesystem) and appears by one rename(2) of the complete directory.
//  - One compile per key: builders of one key serialize on a flock(2) of
//    locks/<key>.lock and look again after getting it. A killed builder's
//    lock is dropped by the kernel; its staging directory stays in tmp/ until
//    verify, prune or the size limit removes it.
//  - Corrupt entries (a file that does not match the seal, unparsable or
//    disagreeing manifests) are reported, removed, and rebuilt.
//  - Nothing outside the root is touched: no link below the root is followed
//    (store/cache_dir.hpp), and maintenance first proves that the root is a
//    bekc cache (the marker, bekc-cache.json) and then removes only names of
//    bekc's own patterns.
// Assumptions for a shared filesystem: rename(2) is atomic on the server
// (true for NFS and every POSIX filesystem); flock(2) reaches the server
// (Linux NFS clients map it to byte-range locks; without them the cache is
// still correct but machines may duplicate a build); clocks are roughly
// synchronised (direct mode compares file timestamps with the local clock).
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/direct.hpp"
#include "store/entry.hpp"
#include "store/layout.hpp"
#include "store/lock.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

// Without $BEKC_CACHE_MAX_SIZE or a stored limit, as ccache's default.
inline constexpr uint64_t kDefaultMaxCacheSize = uint64_t{5} * 1000 * 1000 * 1000;

struct CacheOptions {
    // How long a builder waits for another process building the same key.
    std::chrono::milliseconds lock_timeout{std::chrono::minutes(10)};
    // Maintenance removes bekc's temporaries in tmp/ once they are older than
    // this, and a staging directory only when nobody holds its key's lock.
    std::chrono::seconds stale_temp_age{std::chrono::hours(1)};
    // Direct mode: files changed this close to a record's time are hashed.
    std::chrono::nanoseconds racy_window{std::chrono::seconds(2)};
    // The automatic size limit spares entries used this recently: a build
    // or hit that has just printed an entry's path must find it there.
    std::chrono::seconds recent_use{std::chrono::seconds(1)};
};

struct Miss {
    enum class Kind { Absent, Corrupt };
    Kind kind = Kind::Absent;
    std::string reason;  // Corrupt: what is wrong (the entry has been removed)
};

struct BuildOutcome {
    Entry entry;
    bool hit = false;      // no build ran in this process
    std::string repaired;  // why a corrupt entry was replaced, if one was
    // With `replace`: the library SHA-256 of the entry that was replaced.
    std::optional<std::string> replaced_sha256;
};

// A staging directory under tmp/, which becomes the entry (or tree) when the
// builder returns success.
class Staging {
  public:
    Staging(const CacheDir& dir, fs::path rel) : dir_(dir), rel_(std::move(rel)) {}
    const fs::path& rel() const { return rel_; }
    fs::path path() const { return dir_.path(rel_); }
    // A file written atomically into the staging directory.
    std::expected<void, Error> write(const fs::path& name, std::string_view content) const;
    // Moves `source` (a regular file outside the cache) in as `name`; copied
    // when it is on another filesystem.
    std::expected<void, Error> move_in(const std::string& name, const fs::path& source) const;

  private:
    const CacheDir& dir_;
    fs::path rel_;
};

// Writes the library, dependencies.json and both manifests (manifests last).
// Its error is passed through as it is: kind, file, line and notes.
using Builder = std::function<std::expected<void, Error>(const Staging& staging)>;

struct EntryInfo {
    std::string key, name;
    fs::path dir;
    uint64_t bytes = 0;
    std::chrono::system_clock::time_point last_use;
    size_t targets = 0;
    std::string problem;  // empty unless the entry fails its check
};

struct CacheStats {
    size_t entries = 0, direct_records = 0;
    uint64_t entry_bytes = 0;
    uint64_t bytes = 0;  // everything under the root
};

struct VerifyReport {
    size_t checked = 0;        // entries
    size_t checked_other = 0;  // runtime trees, direct records, memos
    std::vector<std::pair<std::string, std::string>> removed;  // what, why
    size_t stale_temps_removed = 0;
    // inspect(): what failed, left as it is.
    std::vector<std::pair<std::string, std::string>> damaged;  // what, why
};

struct PruneReport {
    size_t entries_removed = 0, records_removed = 0, stale_temps_removed = 0;
    size_t steps_removed = 0;  // step results (store/step_cache.hpp)
    uint64_t bytes_before = 0, bytes_after = 0;
};

struct SizeLimit {
    uint64_t bytes = kDefaultMaxCacheSize;  // 0: no limit
    std::string source;                     // "BEKC_CACHE_MAX_SIZE", "bekc-cache.json", "default"
};

class Cache {
  public:
    // `access` ReadOnly: a read-only layer (store/cache_layers.hpp), which
    // serves hits and is never written: no last-use mark, no repair, no
    // lock, no record or stamp refreshed (store/cache_dir.hpp refuses them).
    explicit Cache(fs::path root, CacheOptions options = {},
                   CacheAccess access = CacheAccess::ReadWrite);

    const fs::path& path() const { return layout_.root(); }
    bool read_only() const { return dir().read_only(); }
    const CacheLayout& layout() const { return layout_; }
    const CacheDir& dir() const { return layout_.dir(); }

    // Creates the root and the marker when missing: before the first write.
    // An existing directory becomes a cache only when it is empty but for
    // what may precede the first build (bekc.conf, the inline sources); any
    // other is refused, and the error names it and how to choose another.
    std::expected<void, Error> ensure_created() const;
    // For maintenance: the root exists and holds the marker (or is a cache of
    // an older bekc, which gets one). The error names the root.
    std::expected<bool, Error> is_cache() const;

    // A hit costs a stat or two and a few small reads (see entry.hpp), and
    // marks the entry used. A corrupt entry is removed, unless someone is
    // rebuilding it right now, and reported as a Corrupt miss; with
    // `repair` false it is only reported (a look-up that leaves the miss to
    // a build, which repairs it and says so: warm/warm_lookup.hpp).
    std::expected<Entry, Miss> lookup(std::string_view key, bool repair = true);

    // The entry for `key`, running `build` when there is none: at most one
    // process per key builds, the others wait (up to lock_timeout) and use
    // its result. With `replace`, an existing entry is rebuilt and replaced.
    std::expected<BuildOutcome, Error> get_or_build(std::string_view key, const Builder& build,
                                                    bool replace = false);

    // A lock on `rel` (a CacheLayout lock path), the cache created first;
    // FileLock::acquire's error when it is not had within lock_timeout.
    std::expected<FileLock, Error> lock(const fs::path& rel) const;

    // A sealed directory outside entries/ (the runtime trees): its absolute
    // path once it exists and passes its seal, built by `build` under the
    // lock `lock_rel` and published by rename when missing or damaged, or
    // always with `replace` (what `--force` compiled takes the place of
    // what the cache held).
    std::expected<fs::path, Error> ensure_tree(const fs::path& rel, const fs::path& lock_rel,
                                               const Builder& build, bool replace = false);

    // Whether the sealed directory `rel` exists and passes its seal.
    bool tree_ready(const fs::path& rel) const;

    // A fresh directory under tmp/ for downloads; removed by the caller with
    // remove(), or by maintenance once stale.
    std::expected<fs::path, Error> make_scratch() const;
    void remove(const fs::path& abs_inside) const;

    // Small memo files (CacheLayout::tool_memo(), gpu_memo(), timing_memo()),
    // read and written as JSON through store/json_memo.hpp: nullopt when
    // missing or unreadable; writes are atomic and best effort.
    std::optional<std::string> read_memo(const fs::path& rel) const;
    void write_memo(const fs::path& rel, std::string_view text) const;

    // Direct mode: the full key recorded for `direct_key`, if its files match.
    // `base`: paths under it are recorded relative to it (store/base_dir.hpp).
    DirectLookup lookup_direct(std::string_view direct_key, const BaseDir& base = {});
    std::expected<void, Error> record_direct(std::string_view direct_key,
                                             const DirectInputs& inputs, const BaseDir& base = {});
    // The same records under a portable key (portable/, store/layout.hpp):
    // of the records whose files hold, the newest `accept` takes.
    DirectLookup lookup_portable(std::string_view portable_key, const BaseDir& base,
                                 const AcceptKey& accept);
    std::expected<void, Error> record_portable(std::string_view portable_key,
                                               const DirectInputs& inputs, const BaseDir& base);

    // The limit in force: $BEKC_CACHE_MAX_SIZE, else the stored one, else the
    // default. The error is a bad value, naming where it came from.
    std::expected<SizeLimit, Error> size_limit(const EnvLookup& env) const;
    std::expected<void, Error> store_size_limit(uint64_t bytes) const;
    // Writes a pack's description into the marker (package/pack.hpp;
    // store/pack_marker.hpp reads it).
    std::expected<void, Error> store_pack_info(const nlohmann::json& info) const;
    // After publishing `entry`: keeps the cache under `limit`, amortised (a
    // full count at most every few publishes, or when the estimate passes the
    // limit), never removing an entry being published or used in the last
    // recent_use. Problems are returned for a warning, never fatal.
    // `direct_key`: the direct record written for it, whose bytes count too.
    std::expected<void, Error> enforce_limit(const Entry& published, std::string_view direct_key,
                                             uint64_t limit);

    // For `bekc cache …`; each first checks is_cache(). Entries sorted by
    // last use, newest first.
    std::expected<std::vector<EntryInfo>, Error> list() const;
    std::expected<CacheStats, Error> stats() const;
    // Removes every entry, or those whose manifest name is `name`; returns
    // how many. Clearing everything also drops direct records, runtime trees,
    // memos and bekc's temporaries. The error is the first that stopped a
    // removal.
    std::expected<size_t, Error> clear(const std::optional<std::string>& name = std::nullopt);
    // Removes least recently used entries and records until everything under
    // the root is at most max_bytes, and stale temporaries; an entry whose
    // key is locked stays.
    std::expected<PruneReport, Error> prune(uint64_t max_bytes);
    // SHA-256 of every sealed file (entries, runtime trees), every record and
    // memo parsed; what fails is removed, with stale temporaries.
    std::expected<VerifyReport, Error> verify();
    // verify's checks of the entries and the sealed trees, changing nothing
    // (a read-only cache: `bekc cache packs --verify`); what fails is in
    // `damaged`.
    std::expected<VerifyReport, Error> inspect() const;

  private:
    // A record added to the record file `rel` (direct/ or portable/).
    std::expected<void, Error> add_record(const fs::path& rel, const DirectInputs& inputs,
                                          const BaseDir& base);
    // The first name in the root that is not bekc's, or "" when none is.
    std::string foreign_name() const;

    std::expected<Entry, Miss> probe(std::string_view key) const;
    std::expected<Entry, Error> publish(const fs::path& staging, std::string_view key);
    std::expected<fs::path, Error> make_staging(std::string_view what) const;
    // Renamed into tmp/ first (nobody sees it half deleted), then removed.
    std::expected<void, Error> discard(const fs::path& rel) const;
    std::expected<PruneReport, Error> prune_to(uint64_t max_bytes,
                                               std::chrono::seconds spare_recent,
                                               const std::string& keep_key);
    std::expected<size_t, Error> remove_stale_temps() const;
    void remove_idle_locks() const;

    CacheLayout layout_;
    CacheOptions options_;
};

}  // namespace bekc
