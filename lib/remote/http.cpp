#include "remote/http.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "store/file_ops.hpp"

namespace bekc {

namespace {

// curl writes "-w" output to stdout after the transfer; the marker finds it
// among error messages, which arrive on the same pipe.
constexpr std::string_view kStatusMarker = "bekc-http-status:";

// curl exit codes that mean no server answered: could not resolve (6),
// could not connect (7), timed out (28), TLS handshake failed (35), empty
// reply (52), connection reset (56).
bool no_answer(int curl_exit) {
    for (int code : {6, 7, 28, 35, 52, 56})
        if (curl_exit == code) return true;
    return false;
}

// The output without the marker line, on one line.
std::string curl_message(const std::string& output) {
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

// The 0600 file holding the Authorization header for one request; removed
// as soon as the request is over.
class HeaderFile {
  public:
    explicit HeaderFile(const std::string& token) : temp_("auth") {
        int fd = ::open(temp_.path().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        0600);
        if (fd < 0) {
            error_ =
                fmt::format("cannot create {}: {}", temp_.path().string(), std::strerror(errno));
            return;
        }
        std::string line = "Authorization: Bearer " + token + "\n";
        if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
            error_ =
                fmt::format("cannot write {}: {}", temp_.path().string(), std::strerror(errno));
        ::close(fd);
    }
    const fs::path& path() const { return temp_.path(); }
    const std::string& error() const { return error_; }

  private:
    TempPath temp_;
    std::string error_;
};

}  // namespace

std::vector<std::string> curl_argv(const CurlRequest& r) {
    std::vector<std::string> argv = {
        r.curl.string(),     "-q",
        "--silent",          "--show-error",
        "--proto",           "=http,https",
        "--connect-timeout", std::to_string(r.limits.connect.count()),
        "--max-time",        std::to_string(r.limits.total.count()),
        "--write-out",       std::string(kStatusMarker) + "%{http_code}\\n"};
    if (r.limits.max_bytes) {
        argv.push_back("--max-filesize");
        argv.push_back(std::to_string(*r.limits.max_bytes));
    }
    if (r.header_file) {
        argv.push_back("--header");
        argv.push_back("@" + r.header_file->string());
    }
    if (r.put) {
        argv.insert(argv.end(), {"--upload-file", r.file.string(), "--output", "/dev/null"});
    } else {
        argv.insert(argv.end(), {"--output", r.file.string()});
    }
    // "--url" keeps a URL that starts with '-' from being read as an option.
    argv.insert(argv.end(), {"--url", r.url});
    return argv;
}

HttpResult interpret_curl(const ProcessResult& run) {
    HttpResult result;
    switch (run.status) {
        case ProcessStatus::SpawnFailed:
            return {HttpResult::Kind::Unreachable, 0, "cannot run curl: " + run.error};
        case ProcessStatus::TimedOut:
        case ProcessStatus::Signaled:
            return {HttpResult::Kind::Unreachable, 0, "curl " + run.describe()};
        default:
            break;
    }
    if (size_t at = run.output.rfind(kStatusMarker); at != std::string::npos)
        result.status = std::atoi(run.output.c_str() + at + kStatusMarker.size());
    std::string message = curl_message(run.output);
    if (run.exit_code != 0) {
        result.kind =
            no_answer(run.exit_code) ? HttpResult::Kind::Unreachable : HttpResult::Kind::Failed;
        result.message = message.empty() ? "curl " + run.describe() : message;
        return result;
    }
    if (result.status >= 200 && result.status < 300) {
        result.kind = HttpResult::Kind::Ok;
    } else if (result.status == 404) {
        result.kind = HttpResult::Kind::NotFound;
    } else {
        result.kind = HttpResult::Kind::Failed;
        result.message = fmt::format("HTTP status {}", result.status);
    }
    return result;
}

HttpResult HttpClient::get(const std::string& url, const fs::path& dest,
                           const HttpLimits& limits) const {
    return send({curl_, false, url, dest, std::nullopt, limits});
}

HttpResult HttpClient::put(const std::string& url, const fs::path& source,
                           const HttpLimits& limits) const {
    return send({curl_, true, url, source, std::nullopt, limits});
}

HttpResult HttpClient::send(CurlRequest request) const {
    std::optional<HeaderFile> header;
    if (token_) {
        header.emplace(*token_);
        if (!header->error().empty()) return {HttpResult::Kind::Failed, 0, header->error()};
        request.header_file = header->path();
    }
    Command command;
    command.argv = curl_argv(request);
    command.description = (request.put ? "PUT " : "GET ") + request.url;
    // A backstop behind curl's own --max-time, for a curl that hangs anyway.
    RunOptions options;
    options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        request.limits.connect + request.limits.total + std::chrono::seconds(5));
    return interpret_curl(run_process(command, options));
}

TempPath::TempPath(const std::string& stem) {
    std::error_code ec;
    fs::path dir = fs::temp_directory_path(ec);
    if (ec) dir = "/tmp";
    path_ = dir / ("bekc-remote-" + stem + "." + unique_suffix());
}

TempPath::~TempPath() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

}  // namespace bekc
