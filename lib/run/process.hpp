// Running one process: the only place in bekc that creates processes.
//
// Children are started with posix_spawn and an argument vector (never a
// shell), read /dev/null as stdin, and write stdout and stderr into one pipe,
// so their output arrives merged in the order they wrote it, as on a terminal.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "run/command.hpp"

namespace bekc {

struct RunOptions {
    // Kill the command when it runs longer. With a timeout the child gets its
    // own process group, so the whole tree (nvcc -> cicc -> ptxas) dies with
    // it; without one it stays in bekc's group, so Ctrl-C reaches it too.
    std::optional<std::chrono::milliseconds> timeout;
};

enum class ProcessStatus {
    NotRun,       // skipped by run_parallel after an earlier failure
    SpawnFailed,  // the program could not be started; `error` says why
    Exited,       // ended by itself; `exit_code` is valid
    Signaled,     // killed by `signal`
    TimedOut,     // ran past RunOptions::timeout and was killed
};

struct ProcessResult {
    ProcessStatus status = ProcessStatus::NotRun;
    int exit_code = -1;  // Exited only
    int signal = 0;      // Signaled and TimedOut
    std::string output;  // stdout and stderr, merged
    std::string error;   // SpawnFailed only
    std::chrono::nanoseconds wall_time{0};

    bool ok() const { return status == ProcessStatus::Exited && exit_code == 0; }
    // "exited with code 2", "killed by signal 9 (Killed)", "timed out after 1.5 s", ...
    std::string describe() const;
};

// Runs the command to completion and returns what happened. Never throws for
// anything the child does; a program that cannot be started is a SpawnFailed
// result. Large outputs are fine: the pipe is drained while the child runs.
ProcessResult run_process(const Command& command, const RunOptions& options = {});

}  // namespace bekc
