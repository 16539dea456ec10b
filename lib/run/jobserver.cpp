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

// A descriptor of our own on `path`, which must be a FIFO: what is there is
// looked at before it is opened (a device or a regular file is never opened),
// no link is followed, and what was opened must be what was looked at. Sets
// `why` when it cannot be used.
int open_fifo(const std::string& path, int flags, std::string& why) {
    struct stat seen, st;
    if (::lstat(path.c_str(), &seen) != 0) {
        why = errno_message("examine", path, errno);
        return -1;
    }
    if (!S_ISFIFO(seen.st_mode)) {
        why = path + " is not a FIFO";
        return -1;
    }
    int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        why = errno_message("open", path, errno);
        return -1;
    }
    if (::fstat(fd, &st) != 0 || st.st_dev != seen.st_dev || st.st_ino != seen.st_ino) {
        ::close(fd);
        why = path + " changed while it was opened";
        return -1;
    }
    return fd;
}

// Why inherited descriptors `r` and `w` are not make's pipe, empty when they
// are: both ends of one pipe (one FIFO: the same device and inode), `r`
// open for reading and `w` for writing, as make hands them out. Anything else
// (a shell's standard input and output, a file, descriptors make closed) is
// not read from or written to.
std::string inherited_pipe_problem(int r, int w) {
    const std::string named = "descriptors " + std::to_string(r) + "," + std::to_string(w);
    struct stat rs, ws;
    const int rflags = ::fcntl(r, F_GETFL), wflags = ::fcntl(w, F_GETFL);
    if (rflags < 0 || wflags < 0) return named + " are not open";
    if (::fstat(r, &rs) != 0 || ::fstat(w, &ws) != 0 || !S_ISFIFO(rs.st_mode) ||
        !S_ISFIFO(ws.st_mode))
        return named + " are not a pipe";
    if (rs.st_dev != ws.st_dev || rs.st_ino != ws.st_ino)
        return named + " are not the two ends of one pipe";
    if ((rflags & O_ACCMODE) == O_WRONLY) return named + ": the read end is not open for reading";
    if ((wflags & O_ACCMODE) == O_RDONLY) return named + ": the write end is not open for writing";
    return "";
}

// Our own non-blocking descriptor on an inherited pipe end: reading it never
// blocks, and make's descriptor keeps its flags.
int reopen_inherited(int fd, int flags, std::string& why) {
    int own =
        ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), flags | O_CLOEXEC | O_NONBLOCK);
    if (own < 0) why = errno_message("reopen", "descriptor " + std::to_string(fd), errno);
    return own;
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
    std::string why;
    if (!auth->fifo.empty()) {
        s.read_fd_ = open_fifo(auth->fifo, O_RDONLY, why);
        if (s.read_fd_ >= 0) s.write_fd_ = open_fifo(auth->fifo, O_WRONLY, why);
    } else if (why = inherited_pipe_problem(auth->read_fd, auth->write_fd); why.empty()) {
        s.read_fd_ = reopen_inherited(auth->read_fd, O_RDONLY, why);
        if (s.read_fd_ >= 0) s.write_fd_ = reopen_inherited(auth->write_fd, O_WRONLY, why);
    }
    // make did not hand the jobserver to this recipe (a recipe without `+`
    // or $(MAKE)), or what MAKEFLAGS names is no jobserver: make itself runs
    // the recipe in one slot, and so does bekc.
    if (s.read_fd_ < 0 || s.write_fd_ < 0) {
        if (s.read_fd_ >= 0) ::close(std::exchange(s.read_fd_, -1));
        s.limit_ = 1;
        s.refusal_ = "make's jobserver is not used: " + why;
    }
    return s;
}

std::expected<JobSlots, Error> JobSlots::serve(int jobs, int tokens,
                                               const PrivateDirPlaces& places) {
    // A pipe holds at least 4 KiB: as many tokens as can be written at once.
    jobs = std::clamp(jobs, 1, 4096);
    tokens = std::clamp(tokens, 0, jobs);
    auto dir = private_temp_dir(places, "jobserver");
    if (!dir) return std::unexpected(dir.error());
    JobSlots s(jobs, false);
    s.served_dir_ = *dir;
    const fs::path fifo = *dir / "fifo";
    if (::mkfifo(fifo.c_str(), 0600) != 0)
        return fail(ErrorKind::Toolchain, fmt::format("cannot make the jobserver FIFO {}: {}",
                                                      fifo.string(), std::strerror(errno)));
    // Ours open first, read end before write end: a FIFO keeps what is
    // written only while it is open.
    std::string why;
    s.read_fd_ = open_fifo(fifo.string(), O_RDONLY, why);
    if (s.read_fd_ >= 0) s.write_fd_ = open_fifo(fifo.string(), O_WRONLY, why);
    if (s.read_fd_ < 0 || s.write_fd_ < 0)
        return fail(ErrorKind::Cache, "cannot use the jobserver FIFO it made: " + why);
    const std::string held(static_cast<size_t>(tokens), '+');
    if (!held.empty() &&
        ::write(s.write_fd_, held.data(), held.size()) != static_cast<ssize_t>(held.size()))
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
      refusal_(std::move(other.refusal_)),
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
