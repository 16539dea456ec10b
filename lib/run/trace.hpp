// Where a build's time went (--trace FILE), as a file that Perfetto
// (ui.perfetto.dev) and chrome://tracing open: the Chrome trace event
// format, one JSON object whose "traceEvents" are complete events ("ph":"X":
// a name, "ts" and "dur" in microseconds, a process "pid" and a thread "tid",
// "args" with the details) and metadata events ("ph":"M") that name the
// processes and threads.
//
// A build is one process. Its thread 0 holds the build itself and, nested in
// it, its phases (prepare, plan, look-up, execute, publish, deliver); threads
// 1, 2, ... are lanes, each holding the steps that ran in it one after
// another. A step takes the lowest lane free when it starts and frees it when
// it ends, so steps that overlap never share a lane, and a build under -j 4
// whose commands take one slot each uses at most four. A package build or a
// replay is one process too, whose lanes hold its child builds; each child
// writes its own trace, which joins the parent's as processes of their own
// (merge).
//
// Times are read on CLOCK_MONOTONIC (std::chrono::steady_clock), which all
// the processes of a machine share. A file counts from its own origin, which
// it records ("otherData": "monotonic_origin_us"), so a merge moves a child's
// events onto the parent's time line.
//
// Nothing here runs without --trace: the build holds a null Trace pointer,
// and TraceSpan and the executor read no clock then.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <expected>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

using TraceClock = std::chrono::steady_clock;

class Trace {
  public:
    using Args = nlohmann::ordered_json;

    // The trace of one process, `name` in the viewers ("k", "package
    // brainevent"), counting from `origin`.
    explicit Trace(std::string name, TraceClock::time_point origin = TraceClock::now());

    void set_name(std::string name);
    std::string name() const;
    TraceClock::time_point origin() const { return origin_; }

    // A span of the process's own thread: the build, or one of its phases.
    // Spans there nest (a phase ends before the build does).
    void span(std::string_view name, std::string_view category, TraceClock::time_point start,
              TraceClock::time_point end, Args args = {});

    // The lowest lane free (1, 2, ...), taken until give_lane().
    int take_lane();
    void give_lane(int lane);

    // A step that ran in `lane` from `start` to `end`.
    void step(std::string_view name, std::string_view category, int lane,
              TraceClock::time_point start, TraceClock::time_point end, Args args = {});

    // The events of another trace (a child build's file, as text() writes
    // it), moved onto this one's time line, each of its processes numbered
    // after the processes this trace has. The message when `text` is not
    // such a trace; nothing is added then.
    // `name`, when given, names the first of its processes (the child's
    // own) as the parent's lane names the child.
    std::expected<void, std::string> merge(std::string_view text, std::string_view name = {});

    // The whole file: one event a line.
    std::string text() const;

    // text() written to `path` atomically (a temporary beside it, then
    // rename(2)); a Usage error naming the path when it cannot be.
    std::expected<void, Error> write(const fs::path& path) const;

  private:
    int64_t micros(TraceClock::time_point t) const;
    void add(nlohmann::ordered_json event);
    std::vector<nlohmann::ordered_json> metadata() const;

    mutable std::mutex mutex_;  // steps end on the runner's worker threads
    std::string name_;
    TraceClock::time_point origin_;
    std::vector<nlohmann::ordered_json> events_;
    std::vector<bool> lanes_busy_;  // index k: lane k + 1
    int next_pid_ = 2;              // 1 is this process
};

// The Usage error for a --trace PATH that cannot be written, asked before the
// build starts (a long build should not end on it): a directory, something
// other than a regular file, a directory that does not exist or that this
// user cannot write in.
std::expected<void, Error> check_trace_path(const fs::path& path);

// Records a span of `trace`'s own thread from construction to destruction;
// nothing, and no clock read, when `trace` is null. A span that ends because
// an exception (the fatal path) leaves it says so: "args": {"failed": true}.
class TraceSpan {
  public:
    TraceSpan(Trace* trace, std::string_view name)
        : trace_(trace), name_(name), exceptions_(std::uncaught_exceptions()) {
        if (trace_) start_ = TraceClock::now();
    }
    ~TraceSpan();
    TraceSpan(const TraceSpan&) = delete;
    TraceSpan& operator=(const TraceSpan&) = delete;

  private:
    Trace* trace_;
    std::string_view name_;
    int exceptions_;
    TraceClock::time_point start_;
};

// f(), as a phase named `name` of `trace`.
template <typename F>
decltype(auto) traced(Trace* trace, std::string_view name, F&& f) {
    TraceSpan span(trace, name);
    return f();
}

}  // namespace bekc
