#include "run/spawn.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace bekc::detail {

namespace {

// bekc's environment with the command's overrides applied, as owned strings.
std::vector<std::string> child_environment(const Command& command) {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) {
        std::string_view entry(*e);
        std::string_view name = entry.substr(0, entry.find('='));
        bool overridden = false;
        for (const auto& [key, value] : command.env_overrides) overridden |= key == name;
        if (!overridden) env.emplace_back(entry);
    }
    for (const auto& [key, value] : command.env_overrides) env.push_back(key + "=" + value);
    return env;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
    std::vector<char*> ptrs;
    for (auto& s : strings) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
    return ptrs;
}

// What the child does between vfork and exec: async-signal-safe calls on
// memory prepared beforehand, nothing else. It leads its own process group,
// so bekc can stop it and everything it starts (run/interrupt.hpp); it gets
// SIGKILL when the thread that started it goes away, so a bekc killed
// outright leaves no compiler behind; and it starts with a clean signal
// state, since bekc (or whoever started it) may ignore SIGPIPE or block
// signals that a compiler relies on.
struct ChildPlan {
    char* const* argv;
    char* const* envp;
    const char* cwd;
    int output_fd;
    pid_t parent;
    volatile int error = 0;
};

[[noreturn]] void child_failed(ChildPlan& plan, int err) {
    plan.error = err;
    _exit(127);
}

[[noreturn]] void become_child(ChildPlan& plan) {
    auto fail = [&](int err) { child_failed(plan, err); };
    for (int sig = 1; sig < NSIG; ++sig)
        if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
    if (::setpgid(0, 0) != 0) fail(errno);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
    // The parent died before the line above: nobody would stop this child.
    if (::getppid() != plan.parent) fail(ESRCH);
    int in = ::open("/dev/null", O_RDONLY);
    if (in < 0) fail(errno);
    if (::dup2(in, 0) < 0 || ::dup2(plan.output_fd, 1) < 0 || ::dup2(plan.output_fd, 2) < 0)
        fail(errno);
    if (in > 2) ::close(in);
    if (plan.cwd && ::chdir(plan.cwd) != 0) fail(errno);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvpe(plan.argv[0], plan.argv, plan.envp);
    child_failed(plan, errno);
}

}  // namespace

std::expected<SpawnedChild, Error> spawn_child(const Command& command) {
    if (command.argv.empty()) return fail(ErrorKind::Toolchain, "empty command");
    // O_CLOEXEC from the start: another thread spawning at the same moment
    // must not inherit our write end, or we would wait for its child's EOF.
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return fail(ErrorKind::Toolchain,
                    fmt::format("cannot create a pipe: {}", std::strerror(errno)));
    }
    std::vector<std::string> args = command.argv;
    std::vector<char*> argv = pointers_to(args);
    std::vector<std::string> env_strings;
    std::vector<char*> envp;
    if (!command.env_overrides.empty()) {
        env_strings = child_environment(command);
        envp = pointers_to(env_strings);
    }
    ChildPlan plan{argv.data(), envp.empty() ? environ : envp.data(),
                   command.cwd.empty() ? nullptr : command.cwd.c_str(), fds[1], ::getpid()};
    // No handler may run in the child before it has reset them all.
    sigset_t all, before;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &before);
    pid_t pid = ::vfork();
    if (pid == 0) become_child(plan);
    int spawn_errno = pid < 0 ? errno : 0;
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    close(fds[1]);
    if (pid > 0 && plan.error != 0) {
        // The child failed before exec (vfork: its error is in our memory).
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        spawn_errno = plan.error;
        pid = -1;
    }
    if (pid < 0) {
        close(fds[0]);
        std::string where = command.cwd.empty() ? "" : fmt::format(" in '{}'", command.cwd);
        return fail(ErrorKind::Toolchain, fmt::format("cannot run '{}'{}: {}", command.argv[0],
                                                      where, std::strerror(spawn_errno)));
    }
    return SpawnedChild{pid, fds[0]};
}

}  // namespace bekc::detail
