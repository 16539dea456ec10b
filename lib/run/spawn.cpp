#include "run/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
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

// The spawn attributes: a clean signal state, since bekc (or whoever started
// it) may ignore SIGPIPE or block signals that a compiler relies on.
void set_attributes(posix_spawnattr_t& attr, bool own_group) {
    sigset_t all, none;
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    if (own_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        posix_spawnattr_setpgroup(&attr, 0);
    }
    posix_spawnattr_setflags(&attr, flags);
}

}  // namespace

std::expected<SpawnedChild, std::string> spawn_child(const Command& command, bool own_group) {
    if (command.argv.empty()) return std::unexpected(std::string("empty command"));
    // O_CLOEXEC from the start: another thread spawning at the same moment
    // must not inherit our write end, or we would wait for its child's EOF.
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        return std::unexpected(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    if (!command.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, command.cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    set_attributes(attr, own_group);

    std::vector<std::string> args = command.argv;
    std::vector<char*> argv = pointers_to(args);
    std::vector<std::string> env_strings;
    std::vector<char*> envp;
    if (!command.env_overrides.empty()) {
        env_strings = child_environment(command);
        envp = pointers_to(env_strings);
    }
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(),
                          envp.empty() ? environ : envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        std::string where = command.cwd.empty() ? "" : fmt::format(" in '{}'", command.cwd);
        return std::unexpected(
            fmt::format("cannot run '{}'{}: {}", command.argv[0], where, std::strerror(rc)));
    }
    return SpawnedChild{pid, fds[0]};
}

}  // namespace bekc::detail
