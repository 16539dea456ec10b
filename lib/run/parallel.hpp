// Running independent commands side by side, the way `make -j` does.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "run/jobserver.hpp"
#include "run/process.hpp"

namespace bekc {

struct ProgressEvent {
    enum class Kind { Started, Finished };
    Kind kind;
    size_t index;  // position in the input vector
    const Command& command;
    const ProcessResult* result;  // Finished only
};

// Called once when each command starts and once when it finishes. Calls are
// serialized, so the callback needs no locking of its own, but they come
// from worker threads and must not block for long.
using ProgressCallback = std::function<void(const ProgressEvent&)>;

// Whether a command may start now (ParallelOptions::ready).
enum class Readiness {
    Wait,   // not yet: another command must finish first
    Start,  // now, once its slots are free
    Skip,   // never: it is left NotRun, and counts as done
};

struct ParallelOptions {
    // Start the remaining commands even after one failed (make -k).
    bool keep_going = false;
    RunOptions run;
    // Under a jobserver (JobSlots::from_jobserver), the slots beyond `jobs`:
    // a token is taken as a command would start and no slot is free, and
    // every token goes back once nothing is left to start. Null: `jobs` only.
    JobSlots* tokens = nullptr;
    // Commands that wait for others (the steps of a build graph): asked,
    // under the scheduler's lock, whether command `index` may start. The
    // commands that may start do so in input order, and whatever a
    // Finished event's listener changes is seen by the next question, so
    // the listener decides which commands a finished one lets start. When
    // no command runs and every one left waits, they are left NotRun.
    // Unset: every command may start.
    std::function<Readiness(size_t)> ready;
};

// Runs commands side by side, their slots (Command::slots, at most `jobs`
// each) adding up to at most `jobs` (jobs < 1 counts as 1), plus the
// jobserver's tokens when options.tokens is set. They start in input order
// (among those options.ready lets start): put the longest first. Results
// come back in input order whatever order the commands finish in. After a
// failure no new command starts unless keep_going; those are NotRun, and
// commands already running are allowed to finish.
std::vector<ProcessResult> run_parallel(const std::vector<Command>& commands, int jobs,
                                        const ProgressCallback& on_event = {},
                                        const ParallelOptions& options = {});

// The order to start `count` items in: those never timed first (they may be
// the longest), the biggest `guess` (a size, in any unit) of them first, then
// the timed ones by decreasing time; ties keep their order.
std::vector<size_t> longest_first(size_t count,
                                  const std::function<std::optional<double>(size_t)>& seconds,
                                  const std::function<double(size_t)>& guess = {});

}  // namespace bekc
