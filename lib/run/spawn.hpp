// Internal to run/: starting a child with posix_spawn. Kept apart from the
// waiting and reading in process.cpp because it is the one place that has to
// get the POSIX details (descriptors, signals, environment) exactly right.
#pragma once

#include <sys/types.h>

#include <expected>
#include <string>

#include "run/command.hpp"

namespace bekc::detail {

struct SpawnedChild {
    pid_t pid = -1;
    int output_fd = -1;  // read end of the merged stdout+stderr pipe; caller closes
};

// Starts the command with stdin from /dev/null and stdout and stderr on one
// pipe. With `own_group` the child leads a new process group (pgid == pid).
std::expected<SpawnedChild, std::string> spawn_child(const Command& command, bool own_group);

}  // namespace bekc::detail
