// Executing a build graph (plan/build_graph.hpp) through a Runner: each step
// starts once the steps it comes after have finished, and the independent
// process steps of a wave run side by side, their slots (Command::slots: one,
// or nvcc's --threads) adding up to at most `jobs`.
#pragma once

#include <cstdio>
#include <expected>
#include <functional>
#include <optional>
#include <string>

#include "plan/build_graph.hpp"
#include "run/jobserver.hpp"
#include "run/runner.hpp"
#include "run/trace.hpp"

namespace bekc {

// What the step cache did for a process step (ExecuteOptions::reuse).
enum class StepCacheOutcome {
    NotKept,  // the step keeps nothing there: it runs
    Hit,      // its outputs were written from the cache: it does not run
    Miss,     // the cache lacks them: it runs, and keeps them
};

struct ExecuteOptions {
    int jobs = 1;
    // A jobserver's tokens: slots beyond `jobs`, taken and given back as the
    // waves run (ParallelOptions::tokens). Null: `jobs` only.
    JobSlots* tokens = nullptr;
    // Where each step's line (describe_step) goes as it starts: stderr for
    // -v, stdout for --dry-run, nowhere when null.
    std::FILE* echo = nullptr;
    // "[2/5] nvcc kernels/csr.cu" on stderr as each process step starts.
    bool progress = false;
    // How long a step is expected to take: the process steps of a wave start
    // longest first (unknown ones before all), so the build does not end
    // waiting on one straggler. Unset: graph order.
    std::function<std::optional<double>(const Step&)> expected_seconds;
    // Called with each process step of a wave before it would start: Hit
    // when its outputs are already in place (a step cache hit), and it is
    // done without running. Unset: every step runs.
    std::function<StepCacheOutcome(const Step&)> reuse;
    // Called with each process step that succeeded, as its wave ends.
    std::function<void(const Step&, const ProcessResult&)> finished;
    // --trace: each step as it ran, in the lane it took (run/trace.hpp), and
    // the step cache's look-ups of each wave. Null: no clock is read.
    Trace* trace = nullptr;
};

// The steps whose results live in the cache: called to write the runtime
// headers (RuntimeHeaders) and to keep the object a RuntimeObject step
// compiled. Absent in a dry run. May throw FatalError.
using CacheStep = std::function<void(const Step&)>;

struct StepFailure {
    size_t step = 0;       // index in the graph
    ProcessResult result;  // a process step's
    std::string error;     // a write's
};

// Runs every step in order of `after`. Stops at the first failure (the
// commands of its wave that are already running finish) and returns it.
std::expected<void, StepFailure> execute_graph(const BuildGraph& graph, Runner& runner,
                                               const ExecuteOptions& options,
                                               const CacheStep& cache_step = {});

}  // namespace bekc
