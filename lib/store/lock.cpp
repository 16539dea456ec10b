#include "store/lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>
#include <utility>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "run/interrupt.hpp"
#include "store/file_ops.hpp"

namespace bekc {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// flock(2) cannot wait with a timeout, so waiters poll with a short backoff.
// 50 ms at most keeps the hand-over quick next to a compile that takes seconds.
constexpr milliseconds kFirstPoll{1};
constexpr milliseconds kLongestPoll{50};

struct Attempt {
    int fd = -1;
    bool busy = false;
    std::string error;
};

// The file may have been removed (remove_and_release) between our open and
// our lock; a lock on an unlinked file excludes nobody.
bool same_file(int fd, const CacheDir& dir, const fs::path& rel) {
    struct stat held;
    auto current = dir.stat(rel);
    return fstat(fd, &held) == 0 && current && held.st_dev == current->dev &&
           held.st_ino == current->ino;
}

Attempt try_once(const CacheDir& dir, const fs::path& rel) {
    for (;;) {
        auto fd = dir.open_rw(rel);
        if (!fd) return {-1, false, fd.error().message};
        if (flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            if (err == EINTR) continue;
            if (err == EWOULDBLOCK) return {-1, true, {}};
            return {-1, false, errno_message("lock", dir.path(rel), err)};
        }
        if (same_file(fd->get(), dir, rel)) return {fd->release(), false, {}};
    }
}

// Written into the lock file so that a waiter can say who it waits for.
void record_holder(int fd) {
    std::time_t now = std::time(nullptr);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string line = fmt::format("pid {} on host {} since {:%Y-%m-%d %H:%M:%S} UTC\n", getpid(),
                                   host, fmt::gmtime(now));
    if (ftruncate(fd, 0) == 0) {
        [[maybe_unused]] ssize_t n = pwrite(fd, line.data(), line.size(), 0);
    }
}

std::string holder_of(const CacheDir& dir, const fs::path& rel) {
    auto text = dir.read(rel, 4096);
    if (!text || text->empty()) return "another process";
    std::string line = text->substr(0, text->find('\n'));
    return line.empty() ? "another process" : line;
}

Error timed_out(const CacheDir& dir, const fs::path& rel, milliseconds timeout) {
    return Error::make(
               ErrorKind::Cache,
               fmt::format("gave up after {:.1f} s waiting for the cache lock {}, held by {}",
                           std::chrono::duration<double>(timeout).count(), dir.path(rel).string(),
                           holder_of(dir, rel)))
        .note(
            "another bekc process is building the same cache entry: let it finish or stop it, "
            "then run again (a lock whose holder died is released by the kernel, so a lock that "
            "stays held means its holder is still running)");
}

}  // namespace

std::expected<FileLock, Error> FileLock::acquire(const CacheDir& dir, const fs::path& rel,
                                                 milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    milliseconds delay = kFirstPoll;
    for (;;) {
        Attempt attempt = try_once(dir, rel);
        if (attempt.fd >= 0) {
            record_holder(attempt.fd);
            return FileLock(dir, rel, attempt.fd);
        }
        if (!attempt.busy) return fail(ErrorKind::Cache, attempt.error);
        // Ctrl-C during a wait of up to minutes: stop waiting.
        if (auto go_on = check_interrupted(); !go_on) return std::unexpected(go_on.error());
        auto now = Clock::now();
        if (now >= deadline) return std::unexpected(timed_out(dir, rel, timeout));
        std::this_thread::sleep_for(std::min<Clock::duration>(delay, deadline - now));
        delay = std::min(delay * 2, kLongestPoll);
    }
}

std::optional<FileLock> FileLock::try_acquire(const CacheDir& dir, const fs::path& rel) {
    Attempt attempt = try_once(dir, rel);
    if (attempt.fd < 0) return std::nullopt;
    record_holder(attempt.fd);
    return FileLock(dir, rel, attempt.fd);
}

FileLock::FileLock(FileLock&& other) noexcept
    : dir_(std::move(other.dir_)), rel_(std::move(other.rel_)), fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
    if (this != &other) {
        release();
        dir_ = std::move(other.dir_);
        rel_ = std::move(other.rel_);
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

FileLock::~FileLock() {
    release();
}

void FileLock::release() {
    if (fd_ >= 0) close(fd_);  // closing the last descriptor drops the flock
    fd_ = -1;
}

void FileLock::remove_and_release() {
    if (fd_ >= 0) (void)dir_.remove_file(rel_);
    release();
}

}  // namespace bekc
