// Test helpers for multi-process tests: forked children that report through
// a pipe, and timestamp control.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>

namespace bekc::test {

// A one-way "I am ready" signal from a child to its parent.
class ReadySignal {
  public:
    ReadySignal() {
        if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
    }
    ~ReadySignal() {
        for (int fd : fds_) {
            if (fd >= 0) close(fd);
        }
    }
    void notify() {
        char c = 1;
        [[maybe_unused]] ssize_t n = write(fds_[1], &c, 1);
    }
    // True when notified within `timeout_ms`.
    bool wait(int timeout_ms = 10000) {
        pollfd p{fds_[0], POLLIN, 0};
        if (poll(&p, 1, timeout_ms) != 1) return false;
        char c;
        return read(fds_[0], &c, 1) == 1;
    }

  private:
    int fds_[2];
};

// Runs `body` in a forked child, which exits with its return value without
// running any of the parent's cleanup (no Catch2 reporting from children).
inline pid_t fork_child(const std::function<int()>& body) {
    pid_t pid = fork();
    if (pid == 0) {
        int code = 99;
        try {
            code = body();
        } catch (...) {
            code = 98;
        }
        _exit(code);
    }
    return pid;
}

// The child's exit code, or 128 + signal when it was killed.
inline int wait_child(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Sets a file's mtime (and atime) to `ns` nanoseconds since the epoch.
inline void set_mtime(const std::filesystem::path& path, int64_t ns) {
    timespec times[2];
    times[0].tv_sec = times[1].tv_sec = ns / 1'000'000'000;
    times[0].tv_nsec = times[1].tv_nsec = ns % 1'000'000'000;
    utimensat(AT_FDCWD, path.c_str(), times, 0);
}

inline int64_t mtime_ns(const std::filesystem::path& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return 0;
    return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace bekc::test
