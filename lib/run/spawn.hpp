// Internal to run/: starting a child (vfork and exec). Kept apart from the
// waiting and reading in process.cpp because it is the one place that has to
// get the POSIX details (descriptors, signals, environment) exactly right.
#pragma once

#include <sys/types.h>

#include <expected>
#include <string>

#include "plan/command.hpp"
#include "util/error.hpp"

namespace bekc::detail {

struct SpawnedChild {
    pid_t pid = -1;
    int output_fd = -1;  // read end of the merged stdout+stderr pipe; caller closes
};

// Starts the command with stdin from /dev/null and stdout and stderr on one
// pipe. The child leads a new process group (pgid == pid) and is killed when
// the thread that started it exits.
std::expected<SpawnedChild, Error> spawn_child(const Command& command);

}  // namespace bekc::detail
