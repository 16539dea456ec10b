#include "run/process.hpp"

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

#include "run/spawn.hpp"

namespace bekc {

namespace {

using Clock = std::chrono::steady_clock;

// After a kill, output still in the pipe is collected for this long; a
// grandchild that escaped the process group must not hold bekc forever.
constexpr std::chrono::seconds kDrainAfterKill{2};

// Appends everything the child writes to `out` until EOF (true) or until the
// deadline passes (false). Reading while the child runs is what keeps a child
// with megabytes of output from blocking on a full pipe.
bool drain(int fd, std::optional<Clock::time_point> deadline, std::string& out) {
    char buf[64 * 1024];
    for (;;) {
        int wait_ms = -1;
        if (deadline) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
            if (left.count() <= 0) return false;
            wait_ms = static_cast<int>(std::min<long long>(left.count(), INT_MAX));
        }
        pollfd p{fd, POLLIN, 0};
        int ready = poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return true;
        if (ready == 0) continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            return true;
        }
    }
}

int wait_for(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

// Reaps the child unless it outlives the deadline (it may close its output
// early and keep running); nullopt then, with the child still unreaped.
std::optional<int> wait_until(pid_t pid, Clock::time_point deadline) {
    std::chrono::microseconds pause{100};
    for (;;) {
        int status = 0;
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) return status;
        if (done < 0 && errno != EINTR) return 0;
        if (Clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(pause);
        pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
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
    }
    return "unknown";
}

ProcessResult run_process(const Command& command, const RunOptions& options) {
    ProcessResult result;
    auto start = Clock::now();
    auto child = detail::spawn_child(command, options.timeout.has_value());
    if (!child) {
        result.status = ProcessStatus::SpawnFailed;
        result.error = child.error();
        return result;
    }
    std::optional<Clock::time_point> deadline;
    if (options.timeout) deadline = start + *options.timeout;
    bool timed_out = !drain(child->output_fd, deadline, result.output);
    std::optional<int> status;
    if (!timed_out && deadline) {
        status = wait_until(child->pid, *deadline);
        timed_out = !status;
    }
    if (timed_out) {
        kill(-child->pid, SIGKILL);  // the group: the child and everything it started
        drain(child->output_fd, Clock::now() + kDrainAfterKill, result.output);
    }
    close(child->output_fd);
    if (!status) status = wait_for(child->pid);
    result.wall_time = Clock::now() - start;
    if (timed_out) {
        result.status = ProcessStatus::TimedOut;
        result.signal = SIGKILL;
    } else if (WIFSIGNALED(*status)) {
        result.status = ProcessStatus::Signaled;
        result.signal = WTERMSIG(*status);
    } else {
        result.status = ProcessStatus::Exited;
        result.exit_code = WEXITSTATUS(*status);
    }
    return result;
}

}  // namespace bekc
