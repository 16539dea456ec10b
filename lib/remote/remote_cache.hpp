// A remote cache shared by a team or CI: whole entries read and written over
// HTTP GET/PUT (WebDAV-style, as ccache's and Bazel's HTTP caches do), or
// as objects of an S3-compatible bucket (s3_target.hpp), whose requests are
// the same GETs and PUTs, signed.
//
// Local first: the remote is asked only after a local miss, and a remote hit
// is verified (library SHA-256 against its manifest) before it is published
// into the local cache. A remote that is down, slow or corrupt never fails a
// build: it is a warning and a local build. Nor does it hang one: a lookup
// has one time limit for all its steps (lookup_budget), every download a
// size limit that bekc enforces itself, and the files a record names are
// hashed only when they are regular files (remote_record.hpp).
//
// Everything downloaded or uploaded is staged in the local cache's tmp/
// (scratch_dir below), never in $TMPDIR.
//
// Remote layout (docs/cache.md, "Remote cache"):
//   URL/direct/<direct key>.json   remote_record.hpp: full key + SHA-256 of
//                                  every dependency, up to 8 records
//   URL/portable/<portable key>.json  the same records for a portable key
//                                  (portable/portable.hpp), for a machine
//                                  with no toolchain
//   URL/entries/<key>.tar          entry_archive.hpp: the library, both
//                                  manifests, dependencies.json and
//                                  target.json
//   URL/leases/<direct key>.<n>.json  lease.hpp: who compiles a miss that
//                                  several machines have at once
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "remote/entry_archive.hpp"
#include "remote/http.hpp"
#include "remote/lease.hpp"
#include "remote/s3_target.hpp"
#include "store/cache.hpp"
#include "store/direct.hpp"
#include "toolchain/tools.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

// The default of $BEKC_REMOTE_WAIT: longer than a kernel module's compile
// (tens of seconds for a CUDA one), short enough that a stalled builder
// costs a job a few minutes, not an hour.
inline constexpr std::chrono::seconds kDefaultRemoteWait{300};

struct RemoteConfig {
    std::string url;                   // base URL, e.g. http://cache:8080/bekc, s3://bucket/prefix
    bool read_only = false;            // CI readers: never PUT
    std::optional<std::string> token;  // sent as "Authorization: Bearer <token>"
    std::chrono::seconds timeout{10};
    // The largest entry archive downloaded (or uploaded).
    uint64_t max_entry_bytes = kDefaultMaxEntryBytes;
    // The most a build waits for another machine that compiles the same miss
    // ($BEKC_REMOTE_WAIT; remote/lease.hpp); 0: every machine compiles.
    std::chrono::seconds wait{kDefaultRemoteWait};
    // An s3:// URL's bucket, settings and credentials.
    std::optional<S3Target> s3;
    // Set when the configuration cannot be used (a URL that is not http(s),
    // a token with a line break, a bad $BEKC_REMOTE_TIMEOUT or
    // $BEKC_REMOTE_MAX_ENTRY_SIZE): RemoteCache
    // warns once and stays off.
    std::string problem;
};

// From --remote-cache / --remote-cache-read-only, else $BEKC_REMOTE_CACHE,
// $BEKC_REMOTE_CACHE_READONLY=1, and the token from $BEKC_REMOTE_TOKEN.
// $BEKC_REMOTE_TIMEOUT (seconds) replaces the 10 s limit on small requests;
// $BEKC_REMOTE_MAX_ENTRY_SIZE (a size as for $BEKC_CACHE_MAX_SIZE: 500M, 1GiB;
// at least 1 KiB) replaces the 256 MiB limit on an entry archive;
// $BEKC_REMOTE_WAIT (seconds, 0 to 3600) the 300 s bound on waiting for
// another machine's compile. An s3:// URL reads its settings and
// credentials (s3_target.hpp), and an unusable one sets `problem`.
// An empty --remote-cache "" turns off a remote set in the environment.
std::optional<RemoteConfig> remote_config(const std::optional<std::string>& flag_url,
                                          bool flag_read_only, const EnvLookup& env);

// The URL for messages: without "user:password@" and trailing slashes.
std::string display_url(const std::string& url);

// The time one lookup (fetch) may take in all, from the request for the
// direct record to the verified entry: 4 x the timeout (40 s by default), the
// record request's limit (1 x) and the entry request's (3 x) added up, so a
// lookup that is slow in one step still completes. Hashing the files a
// record names and unpacking the entry count against it too. When it passes,
// the lookup stops with a warning and the build compiles locally.
std::chrono::seconds lookup_budget(const RemoteConfig& config);

// A fresh directory in the cache's tmp/ for one fetch or publish: every file
// the remote cache downloads or uploads, and curl's side files, are made in
// it, and it is removed with all of them when this goes out of scope (or, if
// bekc is killed, by `bekc cache prune`/`verify` once stale).
class Scratch {
  public:
    Scratch(const Cache& cache, fs::path dir) : cache_(&cache), dir_(std::move(dir)) {}
    Scratch(Scratch&& other) noexcept
        : cache_(std::exchange(other.cache_, nullptr)), dir_(std::move(other.dir_)) {}
    Scratch& operator=(Scratch&&) = delete;
    Scratch(const Scratch&) = delete;
    ~Scratch();
    const fs::path& dir() const { return dir_; }
    fs::path file(std::string_view name) const { return dir_ / name; }

  private:
    const Cache* cache_;
    fs::path dir_;
};

// The one place that decides where the remote cache stages files.
std::expected<Scratch, Error> scratch_dir(const Cache& cache);

using Warn = std::function<void(const std::string&)>;

class RemoteCache {
  public:
    // curl is found through `tools` and runs through `runner`
    // (driver/build.hpp, BuildContext), which must outlive the cache.
    RemoteCache(RemoteConfig config, Warn warn, Runner& runner, const ToolLookup& tools);
    // Releases a lease still held: the build ended without publishing.
    ~RemoteCache();
    RemoteCache(RemoteCache&&) noexcept = default;
    // Releases a lease this one holds first.
    RemoteCache& operator=(RemoteCache&& other) noexcept;

    // After a local miss: the remote's direct record for `direct_key`, checked
    // against the local files it names; then the entry, verified and published
    // into `cache`. nullopt when the remote has nothing usable. Paths the
    // records name under a base directory are checked under `base`.
    std::optional<Entry> fetch(Cache& cache, const std::string& direct_key,
                               const BaseDir& base = {});

    // With no toolchain here (portable/portable.hpp): the remote's portable
    // record for `portable_key`, checked as fetch checks a direct record; the
    // entry of the record that holds, downloaded into `cache`, when `fits`
    // takes it there (it runs on this machine), and the portable record kept
    // in `cache` for the next hit.
    std::optional<Entry> fetch_portable(Cache& cache, const std::string& portable_key,
                                        const BaseDir& base,
                                        const std::function<bool(const Entry&)>& fits);
    // fetch, and on a miss the lease protocol (remote/lease.hpp), unless
    // $BEKC_REMOTE_WAIT is 0: either this build takes the key's lease and
    // returns nullopt to compile (publish then marks the lease done; a build
    // that ends without publishing releases it), or another machine holds
    // it, and this one waits, at most $BEKC_REMOTE_WAIT, for its entry. A
    // read-only machine waits for a lease it finds but takes none. Each wait
    // is counted in `cache`'s statistics (store/stats.hpp).
    std::optional<Entry> fetch_or_wait(Cache& cache, const std::string& direct_key,
                                       const BaseDir& base = {});
    // After a local build: uploads the entry (from `cache`) and its direct
    // record, unless read-only; paths under `base` go out relative to it;
    // then marks a lease this build holds done.
    void publish(const Cache& cache, const Entry& entry, const std::string& direct_key,
                 const DirectInputs& deps, const BaseDir& base = {});
    // And its portable record (after publish: the entry is there already).
    void publish_portable(const Cache& cache, const Entry& entry, const std::string& portable_key,
                          const DirectInputs& deps, const BaseDir& base);

  private:
    // One fetch's time limit, and what it cut short once it passed.
    struct Lookup {
        std::chrono::steady_clock::time_point deadline;
        std::string cut_short;  // e.g. "downloading the entry"; empty while in time
        bool passed() const { return std::chrono::steady_clock::now() >= deadline; }
    };

    std::string direct_url(const std::string& direct_key) const;
    std::string portable_url(const std::string& portable_key) const;
    std::string entry_url(const std::string& key) const;
    // With a lookup, the request's time is what is left of it, if less.
    HttpLimits record_limits(const Lookup* lookup = nullptr) const;
    HttpLimits entry_limits(const Lookup* lookup = nullptr) const;
    // Downloads, unpacks and verifies one entry into `staging`.
    std::expected<void, Error> download_entry(const std::string& key, const fs::path& staging,
                                              const Scratch& scratch, Lookup& lookup);
    // Warns about a failed request; an unreachable remote is skipped from
    // then on, so a dead server costs one timeout per build, not one per request.
    void report(const HttpResult& result, const std::string& request);
    struct RemoteRecords {
        enum class State { Absent, Found, Malformed, Failed } state = State::Failed;
        std::vector<DirectInputs> records;
    };
    RemoteRecords read_records(const std::string& url, const Scratch& scratch, Lookup* lookup);
    // The record at `url` that the local files match, and its entry
    // downloaded into `cache`; nullopt (with the warnings) otherwise.
    struct Fetched {
        DirectInputs record;
        Entry entry;
    };
    std::optional<Fetched> fetch_from(Cache& cache, const std::string& url, const BaseDir& base);
    // Adds `deps` (paths under `base` relative to it) as the record of
    // `entry` to the records at `url`.
    void put_record(const Cache& cache, const std::string& url, const Entry& entry,
                    const DirectInputs& deps, const BaseDir& base);

    // The lease protocol (lease_protocol.cpp).
    struct HeldLease {
        const Cache* cache;
        std::string url;
        Lease lease;
        std::chrono::steady_clock::time_point taken;
    };
    enum class Claim { Won, Taken, Ignored, Failed };
    struct Waited {
        enum class End { Done, Gone, Absent, TimedOut, Failed } end = End::Failed;
        Lease lease;
    };
    std::string lease_url(const std::string& direct_key, int generation) const;
    std::optional<Entry> coordinate(Cache& cache, const std::string& direct_key,
                                    const BaseDir& base);
    Claim claim_lease(const Cache& cache, const std::string& url, const Scratch& scratch);
    Waited wait_on_lease(const std::string& url, const Scratch& scratch,
                         std::chrono::steady_clock::time_point deadline);
    // GETs the lease at `url`: nullopt when absent, a Lease (state Released
    // for a malformed one), or Failed through `failed`.
    std::optional<Lease> read_lease(const std::string& url, const Scratch& scratch, bool& failed);
    // Writes the held lease's last state and lets it go.
    void end_lease(Lease::State state);

    RemoteConfig config_;
    Warn warn_;
    std::string base_;                 // config_.url without trailing '/'
    std::optional<HttpClient> http_;   // empty: disabled or found unreachable
    std::unique_ptr<HeldLease> held_;  // the lease this build took, until it ends
};

}  // namespace bekc
