// HTTP GET and PUT of whole files for the remote cache, by running curl
// through run_process (an argument vector, never a shell).
//
// curl rather than a linked HTTP library: every build machine has it, it
// speaks HTTPS, proxies ($https_proxy) and HTTP/2 without bekc carrying a
// TLS stack, and a remote cache is used at most a few times per build, so a
// process per request costs nothing that matters.
//
// The bearer token never appears on a command line (visible to every user in
// `ps`): it is written to a 0600 file that curl reads with `-H @file`, which
// exists only while that one request runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "run/process.hpp"

namespace bekc {

namespace fs = std::filesystem;

struct HttpResult {
    enum class Kind {
        Ok,           // 2xx
        NotFound,     // 404: a plain miss
        Failed,       // any other answer, or curl failed after connecting
        Unreachable,  // no answer at all: refused, unresolved, timed out
    };
    Kind kind = Kind::Failed;
    int status = 0;       // the HTTP status; 0 when none arrived
    std::string message;  // Failed, Unreachable: what went wrong, in one line
};

struct HttpLimits {
    std::chrono::seconds connect{2};
    std::chrono::seconds total{10};
    // A download larger than this fails instead of filling the disk.
    std::optional<uint64_t> max_bytes;
};

struct CurlRequest {
    fs::path curl;
    bool put = false;  // PUT `file`; else GET into `file`
    std::string url;
    fs::path file;
    std::optional<fs::path> header_file;  // "Authorization: …" for -H @file
    HttpLimits limits;
};

// Pure: the argument vector for one request. Starts with -q so a ~/.curlrc
// cannot change it, allows only http(s), follows no redirects (which could
// carry the token elsewhere), and writes the status code behind a marker on
// stdout for interpret_curl.
std::vector<std::string> curl_argv(const CurlRequest& request);

// Pure: what a finished curl run means.
HttpResult interpret_curl(const ProcessResult& run);

class HttpClient {
  public:
    HttpClient(fs::path curl, std::optional<std::string> token)
        : curl_(std::move(curl)), token_(std::move(token)) {}

    HttpResult get(const std::string& url, const fs::path& dest, const HttpLimits& limits) const;
    HttpResult put(const std::string& url, const fs::path& source, const HttpLimits& limits) const;

  private:
    HttpResult send(CurlRequest request) const;

    fs::path curl_;
    std::optional<std::string> token_;
};

// A fresh path in the temporary directory ($TMPDIR, else /tmp) that is
// removed, with whatever was written there, when this goes out of scope.
class TempPath {
  public:
    explicit TempPath(const std::string& stem);
    ~TempPath();
    TempPath(const TempPath&) = delete;
    TempPath& operator=(const TempPath&) = delete;
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

}  // namespace bekc
