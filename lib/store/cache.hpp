// The build cache: content-addressed entries shared by many processes, and
// possibly by many machines through a shared filesystem. Layout in
// store/layout.hpp and docs/cache.md; integrity check in store/entry.hpp;
// direct mode in store/direct.hpp.
//
// Guarantees:
//  - Readers never see a partial entry: an entry is built in tmp/ (same
//    filesystem) and appears by one rename(2) of the complete directory.
//  - One compile per key: builders of one key serialize on a flock(2) of
//    locks/<key>.lock and look again after getting it. A killed builder's
//    lock is dropped by the kernel; its staging directory stays in tmp/ until
//    verify or prune removes it.
//  - Corrupt entries (unparsable manifest, missing or altered library) are
//    reported, removed, and rebuilt.
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

#include "store/direct.hpp"
#include "store/entry.hpp"
#include "store/layout.hpp"

namespace bekc {

struct CacheOptions {
    // How long a builder waits for another process building the same key.
    std::chrono::milliseconds lock_timeout{std::chrono::minutes(10)};
    // verify/prune remove what is in tmp/ once it is older than this, and
    // for a staging directory only when nobody holds its key's lock. The age
    // protects builds on other machines when the filesystem has no working
    // locks, and other scratch directories that have no key.
    std::chrono::seconds stale_temp_age{std::chrono::hours(1)};
    // Direct mode: files changed this close to a record's time are hashed.
    std::chrono::nanoseconds racy_window{std::chrono::seconds(2)};
};

struct Miss {
    enum class Kind { Absent, Corrupt };
    Kind kind = Kind::Absent;
    std::string reason;  // Corrupt: what is wrong (the entry has been removed)
};

struct CacheError {
    enum class Kind { Builder, LockTimeout, Io };
    Kind kind = Kind::Io;
    std::string message;
};

struct BuildOutcome {
    Entry entry;
    bool hit = false;      // no build ran in this process
    std::string repaired;  // why a corrupt entry was replaced, if one was
};

// Writes the library and both manifests into `staging_dir` (manifests last).
// Its error is passed through as CacheError::Kind::Builder.
using Builder = std::function<std::expected<void, std::string>(const fs::path& staging_dir)>;

struct EntryInfo {
    std::string key, name;
    fs::path dir;
    uint64_t bytes = 0;
    std::chrono::system_clock::time_point last_use;
    size_t targets = 0;
    std::string problem;  // empty unless the manifests cannot be read
};

struct CacheStats {
    size_t entries = 0, direct_records = 0;
    uint64_t bytes = 0;  // entries and direct records together
};

struct VerifyReport {
    size_t checked = 0;
    std::vector<std::pair<std::string, std::string>> removed;  // key, reason
    size_t stale_temps_removed = 0;
};

struct PruneReport {
    size_t entries_removed = 0, records_removed = 0, stale_temps_removed = 0;
    uint64_t bytes_before = 0, bytes_after = 0;
};

class Cache {
  public:
    explicit Cache(fs::path root, CacheOptions options = {});

    const fs::path& path() const { return layout_.root(); }
    const CacheLayout& layout() const { return layout_; }

    // A hit costs a stat or two and two small JSON reads (see entry.hpp),
    // and marks the entry used. A corrupt entry is removed, unless someone is
    // rebuilding it right now, and reported as a Corrupt miss.
    std::expected<Entry, Miss> lookup(std::string_view key);

    // The entry for `key`, running `build` when there is none: at most one
    // process per key builds, the others wait (up to lock_timeout) and use
    // its result.
    std::expected<BuildOutcome, CacheError> get_or_build(std::string_view key,
                                                         const Builder& build);

    // Direct mode: the full key recorded for `direct_key`, if its files match.
    DirectLookup lookup_direct(std::string_view direct_key);
    std::expected<void, std::string> record_direct(std::string_view direct_key,
                                                   const DirectInputs& inputs);

    // For `bekc cache …`: entries sorted by last use, newest first.
    std::vector<EntryInfo> list() const;
    CacheStats stats() const;
    // Removes every entry, or those whose manifest name is `name`; returns
    // how many. Clearing everything also drops direct records and tmp/.
    size_t clear(const std::optional<std::string>& name = std::nullopt);
    // Removes least recently used entries and records until at most
    // max_bytes remain, and stale staging directories.
    PruneReport prune(uint64_t max_bytes);
    // Full SHA-256 of every library; bad entries and stale staging
    // directories are removed.
    VerifyReport verify();

  private:
    std::expected<Entry, Miss> probe(std::string_view key) const;
    std::expected<Entry, CacheError> publish(const fs::path& staging, std::string_view key);
    std::expected<fs::path, CacheError> make_staging(std::string_view key);
    void discard(const fs::path& dir) const;
    size_t remove_stale_temps() const;
    // Lock files nobody holds; they are recreated on demand.
    void remove_idle_locks() const;

    CacheLayout layout_;
    CacheOptions options_;
};

}  // namespace bekc
