// Running one process: the only place in bekc that creates processes.
//
// Children are started with vfork and exec and an argument vector (never a
// shell). Each leads its own process group, which an interrupt of bekc stops
// (run/interrupt.hpp), and is killed when bekc dies. They read /dev/null as
// stdin, and write stdout and stderr into one pipe, so their output arrives
// merged in the order they wrote it, as on a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "plan/command.hpp"

namespace bekc {

struct RunOptions {
    // Kill the command when it runs longer: its process group, so the whole
    // tree (nvcc -> cicc -> ptxas) dies with it.
    std::optional<std::chrono::milliseconds> timeout;

    // Streams the output into a file instead of ProcessResult::output, for
    // output that is data (a download) rather than messages. The file is
    // created (O_EXCL, no link followed, mode 0600) and never holds more
    // than `max_bytes`: as soon as more arrives the child is killed and the
    // result is OutputFailed. The pipe carries stdout and stderr together,
    // so a child whose messages must stay out of the file has to send them
    // elsewhere (curl: --stderr FILE).
    struct OutputFile {
        std::filesystem::path path;
        uint64_t max_bytes = 0;
    };
    std::optional<OutputFile> output_file = std::nullopt;
};

enum class ProcessStatus {
    NotRun,        // skipped by run_parallel after an earlier failure
    SpawnFailed,   // the program could not be started; `error` says why
    Exited,        // ended by itself; `exit_code` is valid
    Signaled,      // killed by `signal`
    TimedOut,      // ran past RunOptions::timeout and was killed
    OutputFailed,  // RunOptions::output_file passed max_bytes or could not be
                   // written; `error` says which. A child still running then
                   // was killed.
};

struct ProcessResult {
    ProcessStatus status = ProcessStatus::NotRun;
    int exit_code = -1;         // Exited only
    int signal = 0;             // Signaled and TimedOut
    std::string output;         // stdout and stderr, merged (empty with output_file)
    std::string error;          // SpawnFailed and OutputFailed only
    uint64_t output_bytes = 0;  // with output_file: the bytes written to it
    std::chrono::nanoseconds wall_time{0};

    bool ok() const { return status == ProcessStatus::Exited && exit_code == 0; }
    // "exited with code 2", "killed by signal 9 (Killed)", "timed out after 1.5 s", ...
    std::string describe() const;
};

// Runs the command to completion and returns what happened. Never throws for
// anything the child does; a program that cannot be started is a SpawnFailed
// result (so is an output_file that cannot be created). Large outputs are
// fine: the pipe is drained while the child runs.
ProcessResult run_process(const Command& command, const RunOptions& options = {});

}  // namespace bekc
