#include "remote/http.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "util/fs.hpp"

namespace bekc {

namespace {

// curl exit codes that mean no server answered: could not resolve (6),
// could not connect (7), timed out (28), TLS handshake failed (35), empty
// reply (52), connection reset (56).
bool no_answer(int curl_exit) {
    for (int code : {6, 7, 28, 35, 52, 56})
        if (curl_exit == code) return true;
    return false;
}

// The messages on one line.
std::string one_line(const std::string& output) {
    std::string text;
    for (size_t pos = 0; pos < output.size();) {
        size_t nl = output.find('\n', pos);
        std::string line =
            output.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        pos = nl == std::string::npos ? output.size() : nl + 1;
        if (line.empty() || line.rfind(kStatusMarker, 0) == 0) continue;
        if (!text.empty()) text += "; ";
        text += line;
    }
    return text;
}

// curl's --max-time and --connect-timeout take fractional seconds; 0 would
// mean "no limit", so the least is a millisecond.
std::string seconds_arg(std::chrono::milliseconds ms) {
    return fmt::format("{:.3f}", static_cast<double>(std::max<int64_t>(ms.count(), 1)) / 1000);
}

// The largest body a GET accepts: the limit less the status line (at least
// one byte; curl reads --max-filesize 0 as "no limit").
uint64_t body_limit(const HttpLimits& limits) {
    return std::max<uint64_t>(limits.max_bytes, kStatusLineSize + 1) - kStatusLineSize;
}

// A file beside the request's file that is removed when the request ends.
class SideFile {
  public:
    explicit SideFile(fs::path path) : path_(std::move(path)) {}
    ~SideFile() { ::unlink(path_.c_str()); }
    SideFile(const SideFile&) = delete;
    SideFile& operator=(const SideFile&) = delete;
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

// One request's header lines, in a 0600 file created fresh (never through a
// planted link).
std::expected<void, Error> write_header_file(const fs::path& path,
                                             const std::vector<std::string>& lines) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return fail(ErrorKind::Cache, errno_message("create", path, errno));
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return fail(ErrorKind::Cache, errno_message("write", path, errno));
    return {};
}

// What an S3-style error code means for whoever set the remote up, in the
// words of its fix. Codes not listed are shown as they are.
struct CodeHint {
    std::string_view code, hint;
};
constexpr CodeHint kCodeHints[] = {
    {"NoSuchBucket", "the bucket does not exist: create it, or fix the bucket in the s3:// URL"},
    {"InvalidAccessKeyId",
     "the store does not know the access key id: check AWS_ACCESS_KEY_ID or the profile"},
    {"SignatureDoesNotMatch",
     "the signature does not match: check the secret access key, and the region "
     "($BEKC_S3_REGION)"},
    {"AuthorizationHeaderMalformed",
     "the store refused the signing region: set $BEKC_S3_REGION to the bucket's region"},
    {"PermanentRedirect",
     "the bucket is in another region: set $BEKC_S3_REGION to the bucket's region"},
    {"RequestTimeTooSkewed",
     "this machine's clock is more than 15 minutes away from the store's: set the clock (NTP)"},
    {"ExpiredToken", "the session token has expired: renew AWS_SESSION_TOKEN"},
    {"InvalidToken", "the session token is not valid: renew AWS_SESSION_TOKEN"},
    {"AccessDenied",
     "the credentials may not do this (docs/cache.md lists the permissions; without "
     "s3:ListBucket a missing object is AccessDenied instead of a miss)"},
};

std::string describe_code(const std::string& code) {
    for (const auto& h : kCodeHints)
        if (h.code == code) return code + ": " + std::string(h.hint);
    return code;
}

// The first few kilobytes of curl's messages: they explain a failure in a
// line or two, and nothing more is worth reading.
std::string read_messages(const fs::path& path) {
    auto fd = open_regular_at(AT_FDCWD, path, path, ReadOptions{UINT64_MAX, false});
    if (!fd) return "";
    std::string text(4096, '\0');
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::read(fd->get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    text.resize(done);
    return text;
}

// Reads the status line off the end of a downloaded file and cuts it off, so
// the file holds the body alone. nullopt when there is none.
std::optional<int> take_status_line(const fs::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<uint64_t>(st.st_size) < kStatusLineSize)
        return std::nullopt;
    off_t body = st.st_size - static_cast<off_t>(kStatusLineSize);
    std::string tail(kStatusLineSize, '\0');
    if (::pread(fd.get(), tail.data(), tail.size(), body) != static_cast<ssize_t>(tail.size()))
        return std::nullopt;
    auto status = parse_status_line(tail);
    if (status && ::ftruncate(fd.get(), body) != 0) return std::nullopt;
    return status;
}

}  // namespace

std::vector<std::string> curl_argv(const CurlRequest& r) {
    std::vector<std::string> argv = {
        r.curl.string(),     "-q",
        "--silent",          "--show-error",
        "--proto",           "=http,https",
        "--connect-timeout", seconds_arg(std::min(r.limits.connect, r.limits.total)),
        "--max-time",        seconds_arg(r.limits.total),
        "--stderr",          r.messages_file.string(),
        "--write-out",       std::string(kStatusMarker) + "%{http_code}\\n"};
    if (r.header_file) {
        argv.push_back("--header");
        argv.push_back(fmt::format("@{}", r.header_file->string()));
    }
    if (r.put) argv.insert(argv.end(), {"--upload-file", r.file.string()});
    // Refused early when the server announces a larger body; the copy of
    // stdout is bounded by run_process whatever the server does.
    argv.insert(argv.end(),
                {"--max-filesize", std::to_string(body_limit(r.limits)), "--output", "-"});
    // "--url" keeps a URL that starts with '-' from being read as an option.
    argv.insert(argv.end(), {"--url", r.url});
    return argv;
}

std::optional<int> parse_status_line(std::string_view text) {
    if (text.size() < kStatusLineSize) return std::nullopt;
    std::string_view line = text.substr(text.size() - kStatusLineSize);
    if (!line.starts_with(kStatusMarker) || line.back() != '\n') return std::nullopt;
    int status = 0;
    for (char c : line.substr(kStatusMarker.size(), 3)) {
        if (c < '0' || c > '9') return std::nullopt;
        status = status * 10 + (c - '0');
    }
    return status;
}

std::string error_body_code(std::string_view body) {
    size_t start = body.find("<Code>");
    if (start == std::string_view::npos) return "";
    start += 6;
    size_t end = body.find("</Code>", start);
    if (end == std::string_view::npos || end - start > 64 || end == start) return "";
    std::string code(body.substr(start, end - start));
    for (char c : code)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') return "";
    return code;
}

HttpResult interpret_curl(const ProcessResult& run, std::optional<int> status,
                          const std::string& messages, std::string_view error_body) {
    HttpResult result;
    switch (run.status) {
        case ProcessStatus::SpawnFailed:
            return {HttpResult::Kind::Unreachable, 0, "cannot run curl: " + run.error, ""};
        case ProcessStatus::TimedOut:
        case ProcessStatus::Signaled:
            return {HttpResult::Kind::Unreachable, 0, "curl " + run.describe(), ""};
        case ProcessStatus::OutputFailed:
            return {HttpResult::Kind::Failed, 0, run.error, ""};
        default:
            break;
    }
    result.status = status.value_or(0);
    std::string message = one_line(messages);
    if (run.exit_code != 0) {
        result.kind =
            no_answer(run.exit_code) ? HttpResult::Kind::Unreachable : HttpResult::Kind::Failed;
        result.message = message.empty() ? "curl " + run.describe() : message;
        return result;
    }
    if (result.status >= 200 && result.status < 300) {
        result.kind = HttpResult::Kind::Ok;
        return result;
    }
    result.code = error_body_code(error_body);
    if (result.status == 404 && result.code != "NoSuchBucket") {
        result.kind = HttpResult::Kind::NotFound;
    } else if (result.status == 412 ||
               (result.status == 409 && result.code != "BucketAlreadyExists")) {
        result.kind = HttpResult::Kind::PreconditionFailed;
        result.message = fmt::format("HTTP status {}", result.status);
    } else {
        result.kind = HttpResult::Kind::Failed;
        result.message = fmt::format("HTTP status {}", result.status);
        if (!result.code.empty()) result.message += " (" + describe_code(result.code) + ")";
    }
    return result;
}

HeaderSource bearer_headers(std::optional<std::string> token) {
    return [token = std::move(token)](
               const HeaderRequest& r) -> std::expected<std::vector<std::string>, Error> {
        std::vector<std::string> lines;
        for (const auto& [name, value] : r.extra) lines.push_back(name + ": " + value);
        if (token) lines.push_back("Authorization: Bearer " + *token);
        return lines;
    };
}

HttpResult HttpClient::get(const std::string& url, const fs::path& dest,
                           const HttpLimits& limits) const {
    return send({curl_, false, url, dest, std::nullopt, limits, {}}, {});
}

HttpResult HttpClient::put(const std::string& url, const fs::path& source, const HttpLimits& limits,
                           bool if_absent) const {
    HttpLimits answer = limits;
    answer.max_bytes = kMaxPutResponseBytes + kStatusLineSize;
    std::vector<std::pair<std::string, std::string>> extra;
    if (if_absent) extra.emplace_back("If-None-Match", "*");
    return send({curl_, true, url, source, std::nullopt, answer, {}}, std::move(extra));
}

HttpResult HttpClient::send(CurlRequest request,
                            std::vector<std::pair<std::string, std::string>> extra) const {
    std::optional<SideFile> header;
    auto lines = headers_ ? headers_({request.put ? "PUT" : "GET", request.url,
                                      request.put ? &request.file : nullptr, std::move(extra)})
                          : std::expected<std::vector<std::string>, Error>{};
    if (!lines) return {HttpResult::Kind::Failed, 0, lines.error().message, ""};
    if (!lines->empty()) {
        header.emplace(fs::path(request.file.string() + ".headers"));
        if (auto w = write_header_file(header->path(), *lines); !w)
            return {HttpResult::Kind::Failed, 0, w.error().message, ""};
        request.header_file = header->path();
    }
    SideFile messages(fs::path(request.file.string() + ".messages"));
    request.messages_file = messages.path();
    // A PUT's answer goes to a file of its own, read for its error code.
    SideFile answer(fs::path(request.file.string() + ".answer"));
    const fs::path& body = request.put ? answer.path() : request.file;
    Command command;
    command.argv = curl_argv(request);
    command.description = (request.put ? "PUT " : "GET ") + request.url;
    // A backstop behind curl's own --max-time, for a curl that hangs anyway.
    ParallelOptions with;
    RunOptions& options = with.run;
    options.timeout = request.limits.total + std::chrono::seconds(2);
    // The body, then the status line.
    options.output_file = {body, body_limit(request.limits) + kStatusLineSize};
    auto runs = runner_->run({command}, 1, {}, with);
    ProcessResult run = runs.empty() ? ProcessResult{} : std::move(runs.front());

    std::optional<int> status;
    if (run.status == ProcessStatus::Exited) status = take_status_line(body);
    std::string error_body;
    if (status && (*status < 200 || *status >= 300)) error_body = read_messages(body);
    HttpResult result = interpret_curl(run, status, read_messages(messages.path()), error_body);
    if (run.status == ProcessStatus::OutputFailed && options.output_file &&
        run.output_bytes == options.output_file->max_bytes)
        result.message =
            fmt::format("the response is larger than the limit of {} bytes; curl was stopped",
                        request.limits.max_bytes);
    return result;
}

}  // namespace bekc
