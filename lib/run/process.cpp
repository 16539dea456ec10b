#include "run/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "run/interrupt.hpp"
#include "run/spawn.hpp"

namespace bekc {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// After a kill, output still in the pipe is collected for this long; a
// grandchild that escaped the process group must not hold bekc forever.
constexpr std::chrono::seconds kDrainAfterKill{2};

// Where the child's output goes: appended to a string, or written to a file
// up to a byte limit. take() returns false to stop reading (the limit passed,
// or the file cannot be written), with `error` saying why.
class Sink {
  public:
    explicit Sink(std::string& text) : text_(&text) {}
    Sink(int fd, const fs::path& path, uint64_t max_bytes)
        : fd_(fd), path_(path), max_bytes_(max_bytes) {}

    bool take(const char* data, size_t size) {
        if (text_) {
            text_->append(data, size);
            return true;
        }
        if (size > max_bytes_ - written_) {
            // Only what fits is kept, so the file never passes the limit.
            size_t fits = static_cast<size_t>(max_bytes_ - written_);
            if (write_all(data, fits)) written_ += fits;
            error_ = fmt::format("its output passed the limit of {} bytes", max_bytes_);
            return false;
        }
        if (!write_all(data, size)) return false;
        written_ += size;
        return true;
    }
    uint64_t written() const { return written_; }
    const std::string& error() const { return error_; }

  private:
    bool write_all(const char* data, size_t size) {
        while (size > 0) {
            ssize_t n = ::write(fd_, data, size);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                error_ = fmt::format("cannot write {}: {}", path_.string(),
                                     std::strerror(n < 0 ? errno : EIO));
                return false;
            }
            data += n;
            size -= static_cast<size_t>(n);
        }
        return true;
    }

    std::string* text_ = nullptr;
    int fd_ = -1;
    fs::path path_;
    uint64_t max_bytes_ = 0, written_ = 0;
    std::string error_;
};

// An interrupted run (run/interrupt.hpp) gives its children this long to
// exit after SIGTERM before they are killed.
constexpr std::chrono::seconds kGraceAfterInterrupt{2};
// How often a wait looks whether the run was interrupted.
constexpr int kInterruptPollMs = 100;

enum class Drained { Eof, Deadline, Stopped, Interrupted };

// Passes everything the child writes to `sink` until EOF, until the deadline
// passes, or until the sink refuses more. Reading while the child runs is
// what keeps a child with megabytes of output from blocking on a full pipe.
Drained drain(int fd, std::optional<Clock::time_point> deadline, Sink& sink,
              bool stop_on_interrupt = true) {
    char buf[64 * 1024];
    for (;;) {
        if (stop_on_interrupt && interrupted_by()) return Drained::Interrupted;
        int wait_ms = kInterruptPollMs;
        if (deadline) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
            if (left.count() <= 0) return Drained::Deadline;
            wait_ms = static_cast<int>(std::min<long long>(left.count(), wait_ms));
        }
        pollfd p{fd, POLLIN, 0};
        int ready = poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return Drained::Eof;
        if (ready == 0) continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            if (!sink.take(buf, static_cast<size_t>(n))) return Drained::Stopped;
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            return Drained::Eof;
        }
    }
}

// Reaps a child that has exited, first taking its group out of the
// interrupt's list (run/interrupt.hpp): once reaped, its pid, and so its group
// id, may be another process's, which the handler must never signal.
int reap(pid_t pid) {
    unregister_child_group(pid);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

int wait_for(pid_t pid) {
    siginfo_t info{};
    // WNOWAIT: the child stays a zombie, its pid taken, until reap().
    while (waitid(P_PID, pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    return reap(pid);
}

// Reaps the child unless it outlives the deadline (it may close its output
// early and keep running); nullopt then, with the child still unreaped.
std::optional<int> wait_until(pid_t pid, Clock::time_point deadline) {
    std::chrono::microseconds pause{100};
    for (;;) {
        siginfo_t info{};
        int r = waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT);
        if (r == 0 && info.si_pid == pid) return reap(pid);
        if (r < 0 && errno != EINTR) {
            unregister_child_group(pid);
            return 0;
        }
        if (Clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(pause);
        pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
    }
}

// How the child ended: its output given up on (`stopped`), killed at the
// deadline, or exited or killed as its wait `status` says.
void set_end(ProcessResult& result, bool stopped, bool timed_out, int status) {
    if (stopped) {
        result.status = ProcessStatus::OutputFailed;
    } else if (timed_out) {
        result.status = ProcessStatus::TimedOut;
        result.signal = SIGKILL;
    } else if (WIFSIGNALED(status)) {
        result.status = ProcessStatus::Signaled;
        result.signal = WTERMSIG(status);
    } else {
        result.status = ProcessStatus::Exited;
        result.exit_code = WEXITSTATUS(status);
    }
}

}  // namespace

std::string ProcessResult::describe() const {
    switch (status) {
        case ProcessStatus::NotRun:
            return "not run";
        case ProcessStatus::SpawnFailed:
            return error;
        case ProcessStatus::Exited:
            return fmt::format("exited with code {}", exit_code);
        case ProcessStatus::Signaled: {
            const char* name = sigdescr_np(signal);
            return fmt::format("killed by signal {} ({})", signal, name ? name : "unknown");
        }
        case ProcessStatus::TimedOut:
            return fmt::format("timed out after {:.1f} s and was killed",
                               std::chrono::duration<double>(wall_time).count());
        case ProcessStatus::OutputFailed:
            return "was killed: " + error;
    }
    return "unknown";
}

ProcessResult run_process(const Command& command, const RunOptions& options) {
    ProcessResult result;
    auto start = Clock::now();
    // The output file first: a child is never started with nowhere to write.
    int file_fd = -1;
    if (options.output_file) {
        file_fd = ::open(options.output_file->path.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (file_fd < 0) {
            result.status = ProcessStatus::SpawnFailed;
            result.error = fmt::format("cannot create {}: {}", options.output_file->path.string(),
                                       std::strerror(errno));
            return result;
        }
    }
    std::optional<Sink> sink;
    if (options.output_file)
        sink.emplace(file_fd, options.output_file->path, options.output_file->max_bytes);
    else
        sink.emplace(result.output);
    auto child = detail::spawn_child(command);
    if (!child) {
        if (file_fd >= 0) ::close(file_fd);
        result.status = ProcessStatus::SpawnFailed;
        result.error = child.error().message;
        return result;
    }
    // The child leads its own group: a kill reaches it and everything it
    // started. An interrupt stops the group (run/interrupt.hpp).
    if (!register_child_group(child->pid)) kill(-child->pid, SIGTERM);
    std::optional<Clock::time_point> deadline;
    if (options.timeout) deadline = start + *options.timeout;
    Drained drained = drain(child->output_fd, deadline, *sink);
    if (drained == Drained::Interrupted) {
        // SIGTERM went to the group; what it still writes explains nothing.
        Sink rest(result.output);
        drained = drain(child->output_fd, Clock::now() + kGraceAfterInterrupt, rest, false);
    }
    bool timed_out = drained == Drained::Deadline;
    bool stopped = drained == Drained::Stopped;
    std::optional<int> status;
    if (drained == Drained::Eof || drained == Drained::Interrupted) {
        auto until = interrupted_by() ? Clock::now() + kGraceAfterInterrupt : deadline;
        if (until) {
            status = wait_until(child->pid, *until);
            timed_out = !status;
        }
    }
    if (timed_out || stopped) {
        kill(-child->pid, SIGKILL);
        // Messages written just before the kill still explain it; data for a
        // file that is given up on is not wanted.
        if (timed_out && !options.output_file) {
            Sink rest(result.output);
            drain(child->output_fd, Clock::now() + kDrainAfterKill, rest, false);
        }
    }
    close(child->output_fd);
    if (!status) status = wait_for(child->pid);
    unregister_child_group(child->pid);
    // close() reports a deferred write error (NFS, a full disk).
    if (file_fd >= 0 && ::close(file_fd) != 0 && !stopped && !timed_out) {
        stopped = true;
        result.error = fmt::format("cannot write {}: {}", options.output_file->path.string(),
                                   std::strerror(errno));
    }
    result.wall_time = Clock::now() - start;
    if (options.output_file) result.output_bytes = sink->written();
    if (stopped && result.error.empty()) result.error = sink->error();
    set_end(result, stopped, timed_out, *status);
    return result;
}

}  // namespace bekc
