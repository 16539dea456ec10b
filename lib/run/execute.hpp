// Executing a build graph (plan/build_graph.hpp) through a Runner: each step
// starts as soon as the steps it comes after have finished, not when a whole
// wave of them has, and the process steps that may run do so side by side,
// their slots (Command::slots: one, or nvcc's --threads) adding up to at
// most `jobs`.
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
    // A jobserver's tokens: slots beyond `jobs`, taken as steps start and
    // given back when none may use them (ParallelOptions::tokens). Null:
    // `jobs` only.
    JobSlots* tokens = nullptr;
    // Where each step's line (describe_step) goes as it starts: stderr for
    // -v, stdout for --dry-run, nowhere when null.
    std::FILE* echo = nullptr;
    // "[2/5] nvcc kernels/csr.cu" on stderr as each process step starts.
    bool progress = false;
    // How long a step is expected to take (nullopt: first_build_seconds).
    // Of the steps that may start, the one with the longest chain of steps
    // after it starts first, so the build does not end waiting on one
    // straggler; a dry run prints each wave's never-timed steps first, then
    // the longest.
    std::function<std::optional<double>(const Step&)> expected_seconds;
    // Called with each process step once the steps it comes after are done:
    // Hit when its outputs are already in place (a step cache hit), and it
    // is done without running. Unset: every step runs.
    std::function<StepCacheOutcome(const Step&)> reuse;
    // Called with each process step that succeeded, as it ends. Like reuse,
    // from the thread that waited for the step, one call at a time.
    std::function<void(const Step&, const ProcessResult&)> finished;
    // --trace: each step as it ran, in the lane it took (run/trace.hpp), and
    // the step cache's look-ups that a step's end (or the start) let happen
    // together. Null: no clock is read.
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

// A first build's guess at a step's seconds, in the proportions nvcc's
// phases take on brainevent's kernels (docs/benchmarks.md, "First builds"):
// a compile (bekc_rt.o's too) 2, cicc 1, cudafe++ and ptxas 0.5, a
// preprocessing 0.15, the link 0.3. Only their order matters (which step
// starts first; equal chains start in graph order).
double first_build_seconds(const Step& step);

// Runs every step in order of `after`. Stops at the first failure (the
// commands already running finish) and returns, of the steps that failed,
// the one that started first.
std::expected<void, StepFailure> execute_graph(const BuildGraph& graph, Runner& runner,
                                               const ExecuteOptions& options,
                                               const CacheStep& cache_step = {});

}  // namespace bekc
