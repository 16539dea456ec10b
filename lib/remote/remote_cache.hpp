// A remote cache shared by a team or CI: whole entries read and written over
// HTTP GET/PUT (WebDAV-style, as ccache's and Bazel's HTTP caches do).
//
// Local first: the remote is asked only after a local miss, and a remote hit
// is verified (library SHA-256 against its manifest) before it is published
// into the local cache. A remote that is down, slow or corrupt never fails a
// build: it is a warning and a local build.
//
// Remote layout (docs/cache.md, "Remote cache"):
//   URL/direct/<direct key>.json   remote_record.hpp: full key + SHA-256 of
//                                  every dependency, up to 8 records
//   URL/entries/<key>.tar          entry_archive.hpp: the library, both
//                                  manifests and dependencies.json
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "remote/http.hpp"
#include "store/cache.hpp"
#include "store/direct.hpp"
#include "util/env.hpp"

namespace bekc {

struct RemoteConfig {
    std::string url;                   // base URL, e.g. http://cache:8080/bekc
    bool read_only = false;            // CI readers: never PUT
    std::optional<std::string> token;  // sent as "Authorization: Bearer <token>"
    std::chrono::seconds timeout{10};
    // Set when the configuration cannot be used (a URL that is not http(s),
    // a token with a line break, a bad $BEKC_REMOTE_TIMEOUT): RemoteCache
    // warns once and stays off.
    std::string problem;
};

// From --remote-cache / --remote-cache-read-only, else $BEKC_REMOTE_CACHE,
// $BEKC_REMOTE_CACHE_READONLY=1, and the token from $BEKC_REMOTE_TOKEN.
// $BEKC_REMOTE_TIMEOUT (seconds) replaces the 10 s limit on small requests.
// An empty --remote-cache "" turns off a remote set in the environment.
std::optional<RemoteConfig> remote_config(const std::optional<std::string>& flag_url,
                                          bool flag_read_only, const EnvLookup& env);

// The URL for messages: without "user:password@" and trailing slashes.
std::string display_url(const std::string& url);

using Warn = std::function<void(const std::string&)>;

class RemoteCache {
  public:
    RemoteCache(RemoteConfig config, Warn warn);

    // After a local miss: the remote's direct record for `direct_key`, checked
    // against the local files it names; then the entry, verified and published
    // into `cache`. nullopt when the remote has nothing usable.
    std::optional<Entry> fetch(Cache& cache, const std::string& direct_key);

    // After a local build: uploads the entry and its direct record, unless
    // read-only.
    void publish(const Entry& entry, const std::string& direct_key, const DirectInputs& deps);

  private:
    std::string direct_url(const std::string& direct_key) const;
    std::string entry_url(const std::string& key) const;
    HttpLimits record_limits() const;
    HttpLimits entry_limits() const;
    // Downloads, unpacks and verifies one entry into `staging`.
    std::expected<void, std::string> download_entry(const std::string& key,
                                                    const fs::path& staging);
    // Warns about a failed request; an unreachable remote is skipped from
    // then on, so a dead server costs one timeout per build, not one per request.
    void report(const HttpResult& result, const std::string& request);
    struct RemoteRecords {
        enum class State { Absent, Found, Malformed, Failed } state = State::Failed;
        std::vector<DirectInputs> records;
    };
    RemoteRecords read_records(const std::string& direct_key);

    RemoteConfig config_;
    Warn warn_;
    std::string base_;                // config_.url without trailing '/'
    std::optional<HttpClient> http_;  // empty: disabled or found unreachable
};

}  // namespace bekc
