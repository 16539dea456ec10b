#include "run/jobserver.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "util/fs.hpp"

namespace bekc {

namespace {

std::optional<int> parse_fd(std::string_view s) {
    int fd = -1;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), fd);
    if (ec != std::errc() || end != s.data() + s.size() || fd < 0) return std::nullopt;
    return fd;
}

// A descriptor of our own on `path`, which must be a FIFO; no link is followed.
int open_fifo(const std::string& path, int flags) {
    int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Our own non-blocking descriptor on an inherited pipe end: reading it never
// blocks, and make's descriptor keeps its flags.
int reopen_inherited(int fd, int flags) {
    struct stat st;
    if (::fcntl(fd, F_GETFD) < 0 || ::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return -1;
    return ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), flags | O_CLOEXEC | O_NONBLOCK);
}

}  // namespace

std::optional<JobserverAuth> parse_makeflags(std::string_view makeflags) {
    std::optional<JobserverAuth> found;
    size_t pos = 0;
    while (pos < makeflags.size()) {
        size_t end = makeflags.find(' ', pos);
        if (end == std::string_view::npos) end = makeflags.size();
        std::string_view word = makeflags.substr(pos, end - pos);
        pos = end + 1;
        std::string_view value;
        for (std::string_view prefix : {"--jobserver-auth=", "--jobserver-fds="})
            if (word.substr(0, prefix.size()) == prefix) value = word.substr(prefix.size());
        if (value.empty()) continue;
        if (value.substr(0, 5) == "fifo:") {
            if (value.size() > 5) found = JobserverAuth{std::string(value.substr(5)), -1, -1};
            continue;
        }
        size_t comma = value.find(',');
        if (comma == std::string_view::npos) continue;
        auto r = parse_fd(value.substr(0, comma));
        auto w = parse_fd(value.substr(comma + 1));
        if (r && w) found = JobserverAuth{"", *r, *w};
    }
    return found;
}

JobSlots JobSlots::take(int wanted, const EnvLookup& env) {
    wanted = std::max(wanted, 1);
    auto flags = env("MAKEFLAGS");
    auto auth = flags ? parse_makeflags(*flags) : std::nullopt;
    if (!auth) return JobSlots(wanted, false);
    JobSlots s(wanted, true);
    if (!auth->fifo.empty()) {
        s.read_fd_ = open_fifo(auth->fifo, O_RDONLY);
        s.write_fd_ = open_fifo(auth->fifo, O_WRONLY);
    } else {
        s.read_fd_ = reopen_inherited(auth->read_fd, O_RDONLY);
        s.write_fd_ = reopen_inherited(auth->write_fd, O_WRONLY);
    }
    // make did not hand the jobserver to this recipe (a recipe without `+`
    // or $(MAKE)): make itself runs it in one slot, and so does bekc.
    if (s.read_fd_ < 0 || s.write_fd_ < 0) {
        if (s.read_fd_ >= 0) ::close(std::exchange(s.read_fd_, -1));
        if (s.write_fd_ >= 0) ::close(std::exchange(s.write_fd_, -1));
        s.limit_ = 1;
    }
    return s;
}

std::expected<JobSlots, Error> JobSlots::serve(int jobs) {
    // A pipe holds at least 4 KiB: as many tokens as can be written at once.
    jobs = std::clamp(jobs, 1, 4096);
    auto dir = private_temp_dir("jobserver");
    if (!dir) return std::unexpected(dir.error());
    JobSlots s(jobs, false);
    s.served_dir_ = *dir;
    const fs::path fifo = *dir / "fifo";
    if (::mkfifo(fifo.c_str(), 0600) != 0)
        return fail(ErrorKind::Toolchain, fmt::format("cannot make the jobserver FIFO {}: {}",
                                                      fifo.string(), std::strerror(errno)));
    // Ours open first, read end before write end: a FIFO keeps what is
    // written only while it is open.
    s.read_fd_ = open_fifo(fifo.string(), O_RDONLY);
    s.write_fd_ = open_fifo(fifo.string(), O_WRONLY);
    if (s.read_fd_ < 0 || s.write_fd_ < 0)
        return fail(ErrorKind::Cache,
                    fmt::format("cannot open the jobserver FIFO {}", fifo.string()));
    const std::string tokens(static_cast<size_t>(jobs - 1), '+');
    if (!tokens.empty() &&
        ::write(s.write_fd_, tokens.data(), tokens.size()) != static_cast<ssize_t>(tokens.size()))
        return fail(ErrorKind::Cache, "cannot fill the jobserver FIFO " + fifo.string());
    s.makeflags_ = fmt::format("-j{} --jobserver-auth=fifo:{}", jobs, fifo.string());
    return s;
}

bool JobSlots::try_take() {
    if (read_fd_ < 0) return false;
    char c;
    for (;;) {
        ssize_t n = ::read(read_fd_, &c, 1);
        if (n == 1) {
            tokens_ += c;
            return true;
        }
        if (n < 0 && errno == EINTR) continue;
        return false;  // none free now (EAGAIN), or make is gone
    }
}

void JobSlots::give_back() {
    if (tokens_.empty() || write_fd_ < 0) return;
    // A full pipe cannot hold a token that came out of it unless another
    // client wrote back more than it took: wait a second for room at most.
    for (int full = 0; full < 1000;) {
        ssize_t n = ::write(write_fd_, &tokens_.back(), 1);
        if (n == 1) break;
        if (n < 0 && errno == EAGAIN) {
            ::usleep(1000);
            ++full;
        } else if (n < 0 && errno != EINTR) {
            break;  // make is gone: nobody needs the token any more
        }
    }
    tokens_.pop_back();
}

JobSlots::JobSlots(JobSlots&& other) noexcept
    : limit_(other.limit_),
      named_by_make_(other.named_by_make_),
      tokens_(std::move(other.tokens_)),
      read_fd_(std::exchange(other.read_fd_, -1)),
      write_fd_(std::exchange(other.write_fd_, -1)),
      makeflags_(std::move(other.makeflags_)),
      served_dir_(std::move(other.served_dir_)) {
    other.tokens_.clear();
    other.served_dir_.clear();
}

JobSlots::~JobSlots() {
    while (!tokens_.empty()) give_back();
    if (read_fd_ >= 0) ::close(read_fd_);
    if (write_fd_ >= 0) ::close(write_fd_);
    if (!served_dir_.empty()) {
        std::error_code ec;
        fs::remove_all(served_dir_, ec);
    }
}

}  // namespace bekc
