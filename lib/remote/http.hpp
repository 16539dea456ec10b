// HTTP GET and PUT of whole files for the remote cache, by running curl
// through run_process (an argument vector, never a shell).
//
// curl rather than a linked HTTP library: every build machine has it, it
// speaks HTTPS, proxies ($https_proxy) and HTTP/2 without bekc carrying a
// TLS stack, and a remote cache is used at most a few times per build, so a
// process per request costs nothing that matters.
//
// A download is bounded by bekc itself, not by curl: curl writes the body to
// its stdout, and run_process copies the pipe into the destination file and
// kills curl as soon as more than HttpLimits::max_bytes arrive. (curl's
// --max-filesize, passed too, only refuses a Content-Length that is too
// large; a chunked or unterminated body would run on.) curl's messages go to
// a file of their own (--stderr), so they never mix with the body.
//
// Every file of a request lives beside the file it downloads or uploads, in
// the caller's scratch directory: the messages, a PUT's response, and the
// request's own headers (a bearer token, an S3 signature and session token),
// which never appear on a command line (visible to every user in `ps`) but in
// a 0600 file that curl reads with `-H @file`, removed when the request ends.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run/process.hpp"
#include "run/runner.hpp"
#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

struct HttpResult {
    enum class Kind {
        Ok,           // 2xx
        NotFound,     // 404: a plain miss
        Failed,       // any other answer, or curl failed after connecting
        Unreachable,  // no answer at all: refused, unresolved, timed out
        // 412 (or S3's 409 ConditionalRequestConflict) to a conditional PUT:
        // the object exists, or another writer is creating it.
        PreconditionFailed,
    };
    Kind kind = Kind::Failed;
    int status = 0;       // the HTTP status; 0 when none arrived
    std::string message;  // Failed, Unreachable: what went wrong, in one line
    // An S3-style error body's <Code> ("NoSuchBucket", "SignatureDoesNotMatch"),
    // when the answer had one.
    std::string code;
};

// The status line curl writes after everything else on stdout: a marker,
// three digits ("000" when no answer came) and a newline, always this long.
inline constexpr std::string_view kStatusMarker = "bekc-http-status:";
inline constexpr size_t kStatusLineSize = kStatusMarker.size() + 4;

struct HttpLimits {
    std::chrono::milliseconds connect{2000};
    std::chrono::milliseconds total{10000};
    // GET: the most the download may put on the disk. The body may be
    // kStatusLineSize bytes less (curl's status line follows it into the
    // file until the request ends); a larger one fails.
    uint64_t max_bytes = 0;
};

struct CurlRequest {
    fs::path curl;
    bool put = false;  // PUT `file`; else GET into curl's stdout
    std::string url;
    fs::path file;
    std::optional<fs::path> header_file;  // "Authorization: …" lines for -H @file
    HttpLimits limits;
    fs::path messages_file;  // curl's own messages (--stderr)
};

// The largest response body to a PUT that is kept (for its error code).
inline constexpr uint64_t kMaxPutResponseBytes = 64 << 10;

// Pure: the argument vector for one request. Starts with -q so a ~/.curlrc
// cannot change it, allows only http(s), follows no redirects (which could
// carry the token elsewhere), sends the response body (a GET's, and a PUT's
// answer) to stdout, and ends stdout with the status line that
// parse_status_line reads.
std::vector<std::string> curl_argv(const CurlRequest& request);

// Pure: the HTTP status from the last kStatusLineSize bytes of curl's stdout,
// or nullopt when they are not a status line.
std::optional<int> parse_status_line(std::string_view text);

// Pure: the <Code> of an S3-style XML error body (`<Error><Code>NoSuchKey
// </Code>...`), when it has one made of letters, digits and '.'; "" otherwise.
std::string error_body_code(std::string_view body);

// Pure: what a finished curl run means, given the status from its stdout, its
// messages and the start of a failed answer's body. An error code in the
// body becomes a message that says how to fix it (a wrong key, a missing
// bucket, a clock off by more than 15 minutes); a 404 whose code says the
// bucket is missing is a failure, not a miss.
HttpResult interpret_curl(const ProcessResult& run, std::optional<int> status,
                          const std::string& messages, std::string_view error_body = {});

// One request, as the source of its headers sees it.
struct HeaderRequest {
    std::string_view method;  // "GET", "PUT"
    const std::string& url;
    const fs::path* upload;  // a PUT's body; nullptr for a GET
    // Headers of the request itself (If-None-Match), which a signature covers.
    std::vector<std::pair<std::string, std::string>> extra;
};
// The "Name: value" lines a request carries besides curl's own, or why they
// cannot be made. They may hold secrets, so they only ever reach curl
// through a 0600 file.
using HeaderSource =
    std::function<std::expected<std::vector<std::string>, Error>(const HeaderRequest&)>;

// `extra`, and "Authorization: Bearer <token>" when there is a token.
HeaderSource bearer_headers(std::optional<std::string> token);

class HttpClient {
  public:
    // curl runs through `runner` (run/runner.hpp), which must outlive the client.
    HttpClient(fs::path curl, HeaderSource headers, Runner& runner)
        : curl_(std::move(curl)), headers_(std::move(headers)), runner_(&runner) {}

    // `dest` must not exist; it is created with O_EXCL, never holds more than
    // limits.max_bytes, and holds the body alone when this returns.
    HttpResult get(const std::string& url, const fs::path& dest, const HttpLimits& limits) const;
    // `if_absent`: only when nothing is at `url` (If-None-Match: *); a store
    // that honours it answers PreconditionFailed otherwise.
    HttpResult put(const std::string& url, const fs::path& source, const HttpLimits& limits,
                   bool if_absent = false) const;

  private:
    HttpResult send(CurlRequest request,
                    std::vector<std::pair<std::string, std::string>> extra) const;

    fs::path curl_;
    HeaderSource headers_;
    Runner* runner_;
};

}  // namespace bekc
