#include "run/execute.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <vector>

#include "plan/command.hpp"
#include "run/parallel.hpp"

namespace bekc {

double first_build_seconds(const Step& s) {
    switch (s.kind) {
        case StepKind::Compile:
        case StepKind::RuntimeObject:  // a compile too: it starts with the others
            return 2.0;
        case StepKind::NvccPhase:
            if (s.phase == "cicc") return 1.0;
            if (s.phase == "cudafe++" || s.phase == "ptxas") return 0.5;
            if (s.phase == "host-preprocess" || s.phase == "device-preprocess") return 0.15;
            return 0.05;  // fatbinary, the fat binary's assembler
        case StepKind::Link:
            return 0.3;
        default:
            return 0.0;  // no process
    }
}

namespace {

// One execution of a graph: which steps are done, and the counts its
// progress lines show. A step that runs no process (a write, the cache's
// steps) is done as soon as the steps it comes after are, and so is a
// process step whose results the cache had (ExecuteOptions::reuse); the
// other process steps are handed to the runner at once, each let start
// (ParallelOptions::ready) as soon as the steps it comes after are done.
class GraphExecution {
  public:
    GraphExecution(const BuildGraph& graph, Runner& runner, const ExecuteOptions& options,
                   const CacheStep& cache_step)
        : steps_(graph.steps),
          runner_(runner),
          options_(options),
          cache_step_(cache_step),
          done_(steps_.size(), false),
          may_start_(steps_.size(), false),
          cache_outcome_(steps_.size(), StepCacheOutcome::NotKept),
          next_(steps_.size()),
          level_(steps_.size(), 0),
          left_(steps_.size()) {
        for (size_t i = 0; i < steps_.size(); ++i) {
            processes_ += steps_[i].runs() ? 1 : 0;
            for (size_t a : steps_[i].after) {
                if (a >= i) continue;  // a cycle: never ready, reported below
                next_[a].push_back(i);
                level_[i] = std::max(level_[i], level_[a]);
            }
            level_[i] += steps_[i].runs() ? 1 : 0;
        }
    }

    std::expected<void, StepFailure> run() {
        if (options_.trace) looking_ = TraceClock::now();
        for (size_t i = 0; i < steps_.size() && !halted_; ++i) settle(i);
        trace_look_ups();
        if (!failure_) run_processes();
        if (error_) std::rethrow_exception(error_);
        if (failure_) return std::unexpected(*failure_);
        if (left_ > 0) {
            StepFailure f;
            f.error = "internal error: the build graph has a cycle";
            return std::unexpected(f);
        }
        return {};
    }

  private:
    void echo(const Step& s) const {
        if (options_.echo) std::fprintf(options_.echo, "%s\n", describe_step(s).c_str());
    }

    bool ready(size_t i) const {
        for (size_t a : steps_[i].after)
            if (a >= i || !done_[a]) return false;
        return true;
    }

    // Step `i` once the steps it comes after are done: a write or a cache
    // step is done now, a process step the cache had too; any other process
    // step may start. Whatever is done settles the steps after it.
    void settle(size_t i) {
        if (done_[i] || may_start_[i] || halted_ || !ready(i)) return;
        const Step& s = steps_[i];
        const auto start = options_.trace ? TraceClock::now() : TraceClock::time_point{};
        if (s.runs()) {
            if (options_.reuse) cache_outcome_[i] = options_.reuse(s);
            hits_ += cache_outcome_[i] == StepCacheOutcome::Hit ? 1 : 0;
            misses_ += cache_outcome_[i] == StepCacheOutcome::Miss ? 1 : 0;
            if (cache_outcome_[i] != StepCacheOutcome::Hit) {
                may_start_[i] = true;
                return;
            }
            if (options_.trace) trace_in_a_lane(i, start, nullptr, "");
            if (options_.echo)
                std::fprintf(options_.echo, "# reused: %s\n", s.command.description.c_str());
            --processes_;
        } else {
            echo(s);
            auto written = finish_in_process(i);
            if (options_.trace)
                trace_in_a_lane(i, start, nullptr, written ? "" : written.error().error);
            if (!written) {
                fail(written.error());
                return;
            }
        }
        mark_done(i);
    }

    void mark_done(size_t i) {
        done_[i] = true;
        --left_;
        for (size_t n : next_[i]) settle(n);
    }

    void fail(StepFailure f) {
        if (!failure_) failure_ = std::move(f);
        halted_ = true;
    }

    // A step that runs no process: the wrappers' writes, the cache's steps.
    std::expected<void, StepFailure> finish_in_process(size_t i) {
        const Step& s = steps_[i];
        if (s.kind == StepKind::WriteWrapper) {
            std::string content = s.content;
            if (!s.copy_from.empty() && runner_.executes()) {
                auto text = read_file(s.copy_from);
                if (!text) return std::unexpected(StepFailure{i, {}, text.error().message});
                content = std::move(*text);
            }
            for (const auto& out : s.command.outputs)
                if (auto w = runner_.write_file(out, content); !w)
                    return std::unexpected(StepFailure{i, {}, w.error().message});
        } else if (cache_step_) {
            cache_step_(s);
        }
        return {};
    }

    // The order the process steps may start in. A dry run prints them wave
    // by wave (level_), the longest first within a wave; a build starts
    // first the step with the longest chain of steps after it
    // (ExecuteOptions::expected_seconds), so that the steps the build's end
    // waits on are never left behind shorter ones.
    std::vector<size_t> start_order() const {
        std::vector<size_t> order;
        for (size_t i = 0; i < steps_.size(); ++i)
            if (steps_[i].runs() && !done_[i]) order.push_back(i);
        std::vector<std::optional<double>> known(steps_.size());
        std::vector<double> chain(steps_.size(), 0.0);
        for (size_t i = steps_.size(); i-- > 0;) {
            if (options_.expected_seconds) known[i] = options_.expected_seconds(steps_[i]);
            double after = 0.0;
            for (size_t n : next_[i]) after = std::max(after, chain[n]);
            chain[i] = known[i].value_or(first_build_seconds(steps_[i])) + after;
        }
        if (!runner_.executes())  // a wave's steps never timed first (they may be the longest)
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
                if (level_[a] != level_[b]) return level_[a] < level_[b];
                if (!known[a] || !known[b]) return !known[a] && known[b];
                return *known[a] > *known[b];
            });
        else
            std::stable_sort(order.begin(), order.end(),
                             [&](size_t a, size_t b) { return chain[a] > chain[b]; });
        return order;
    }

    // "# wave 2: 3 commands side by side, 3 slots within -j 4", before the
    // first command of wave `level` starts: the steps as deep in the graph
    // (the commands after one wave's may start before the wave's last does).
    void announce(int level, const std::vector<size_t>& order) {
        if (!options_.echo || level <= announced_) return;
        announced_ = level;
        size_t count = 0;
        int slots = 0;
        for (size_t i : order)
            if (level_[i] == level) {
                ++count;
                slots += steps_[i].command.slots;
            }
        // More slots than -j: the commands start in this order, each
        // once its slots are free (run/parallel.hpp), not all at once.
        const bool queued = slots > options_.jobs && !options_.tokens;
        std::fprintf(options_.echo, "# wave %d: %zu %s, %d %s%s -j %d%s\n", level, count,
                     count == 1 ? "command"
                     : queued   ? "commands"
                                : "commands side by side",
                     slots, slots == 1 ? "slot" : "slots", queued ? ", queued within" : " within",
                     options_.jobs, options_.tokens ? " and the jobserver's tokens" : "");
    }

    // Runs the process steps, each once the steps it comes after are done.
    void run_processes() {
        const std::vector<size_t> order = start_order();
        if (order.empty()) return;
        std::vector<Command> commands;
        for (size_t i : order) commands.push_back(steps_[i].command);
        ParallelOptions po;
        po.tokens = options_.tokens;
        if (options_.trace) {
            lanes_.assign(order.size(), 0);
            starts_.assign(order.size(), {});
        }
        po.ready = [&](size_t k) {
            std::lock_guard lock(mutex_);
            if (done_[order[k]]) return Readiness::Skip;
            return !halted_ && may_start_[order[k]] ? Readiness::Start : Readiness::Wait;
        };
        auto on_event = [&](const ProgressEvent& e) {
            std::lock_guard lock(mutex_);
            const size_t i = order[e.index];
            if (options_.trace) trace_event(i, e, lanes_[e.index], starts_[e.index]);
            if (e.kind == ProgressEvent::Kind::Started) {
                started(i, order);
                return;
            }
            if (options_.trace) looking_ = TraceClock::now();
            finished(i, e.index, *e.result);
            trace_look_ups();
        };
        auto results = runner_.run(commands, options_.jobs, on_event, po);
        // A step left unstarted with nothing failed: the runner stopped
        // (an interrupt), and the step is what did not run.
        for (size_t k = 0; k < order.size() && !failure_; ++k)
            if (!done_[order[k]])
                fail({order[k], k < results.size() ? results[k] : ProcessResult{}, {}});
    }

    void started(size_t i, const std::vector<size_t>& order) {
        ++started_;
        announce(level_[i], order);
        if (options_.echo)
            echo(steps_[i]);
        else if (options_.progress)
            std::fprintf(stderr, "[%zu/%zu] %s\n", started_, processes_,
                         steps_[i].command.description.c_str());
    }

    // Called once a process step ended, from the thread that waited for it
    // (serialized): a failure stops the build; a success settles the steps
    // after it. An exception (a cache step's) stops it too, and is thrown
    // again from run().
    void finished(size_t i, size_t position, const ProcessResult& r) {
        if (done_[i]) return;
        if (!r.ok()) {
            // Of the steps that failed, the one that started first (as the
            // steps that ran beside it finish), whichever ended first.
            if (failure_ && failed_at_ <= position) return;
            failed_at_ = position;
            failure_.reset();
            fail({i, r, {}});
            return;
        }
        try {
            const Step& s = steps_[i];
            if (s.kind == StepKind::RuntimeObject && cache_step_) cache_step_(s);
            mark_done(i);
            if (options_.finished) options_.finished(s, r);
        } catch (...) {
            if (!error_) error_ = std::current_exception();
            halted_ = true;
        }
    }

    // --trace: what the trace says of step `i` (a process step's `result`,
    // or the error of one that runs none).
    Trace::Args step_args(size_t i, const ProcessResult* result, const std::string& error) const {
        const Step& s = steps_[i];
        Trace::Args args = {{"kind", step_kind_name(s.kind)}};
        if (!s.phase.empty()) args["phase"] = s.phase;
        if (s.runs())
            args["command"] = display_command(s.command);
        else
            args["outputs"] = s.command.outputs;
        if (cache_outcome_[i] != StepCacheOutcome::NotKept)
            args["step_cache"] = cache_outcome_[i] == StepCacheOutcome::Hit ? "hit" : "miss";
        args["status"] = !error.empty()            ? error
                         : result && !result->ok() ? result->describe()
                                                   : "ok";
        // The graph, for tools that follow its edges: the step's index and
        // those it comes after.
        args["step"] = i;
        args["after"] = s.after;
        return args;
    }

    // A step's event, named as progress names it.
    void trace_step(size_t i, int lane, TraceClock::time_point start, Trace::Args args) const {
        const Step& s = steps_[i];
        std::string name = s.command.description;
        if (name.empty())
            name = std::string(step_kind_name(s.kind)) +
                   (s.command.outputs.empty() ? "" : " " + s.command.outputs.front());
        options_.trace->step(name, step_kind_name(s.kind), lane, start, TraceClock::now(),
                             std::move(args));
    }

    // A step done without a process (a write, a step cache hit), from
    // `start` to now, in a lane no process holds: before the processes
    // start, or as one ends, whose lane is free again.
    void trace_in_a_lane(size_t i, TraceClock::time_point start, const ProcessResult* result,
                         const std::string& error) const {
        const int lane = options_.trace->take_lane();
        trace_step(i, lane, start, step_args(i, result, error));
        options_.trace->give_lane(lane);
    }

    // The step cache's look-ups since looking_: those the start, or one
    // step's end, let happen together.
    void trace_look_ups() {
        if (options_.trace && hits_ + misses_ > 0)
            options_.trace->span("step cache", "step-cache", looking_, TraceClock::now(),
                                 {{"hits", hits_}, {"misses", misses_}});
        hits_ = misses_ = 0;
    }

    // A process step's start (it takes a lane) or end (its event, and the
    // lane is free again). Events come one at a time (run/parallel.hpp).
    void trace_event(size_t i, const ProgressEvent& e, int& lane,
                     TraceClock::time_point& start) const {
        if (e.kind == ProgressEvent::Kind::Started) {
            lane = options_.trace->take_lane();
            start = TraceClock::now();
            return;
        }
        trace_step(i, lane, start, step_args(i, e.result, ""));
        options_.trace->give_lane(lane);
    }

    const std::vector<Step>& steps_;
    Runner& runner_;
    const ExecuteOptions& options_;
    const CacheStep& cache_step_;
    std::vector<bool> done_, may_start_;
    std::vector<StepCacheOutcome> cache_outcome_;  // each step's, as reuse said
    // --trace: the lane each process step took, and when it started; the
    // step cache's look-ups since the last span of them.
    std::vector<int> lanes_;
    std::vector<TraceClock::time_point> starts_;
    TraceClock::time_point looking_{};
    int hits_ = 0, misses_ = 0;
    std::vector<std::vector<size_t>> next_;  // the steps that come after each
    std::vector<int> level_;                 // process steps up to and including it
    size_t left_, processes_ = 0, started_ = 0;
    int announced_ = 0;
    bool halted_ = false;  // nothing more starts
    std::optional<StepFailure> failure_;
    size_t failed_at_ = 0;  // its place in the start order (a process step's)
    std::exception_ptr error_;
    std::mutex mutex_;  // the runner's threads ask and tell
};

}  // namespace

std::expected<void, StepFailure> execute_graph(const BuildGraph& graph, Runner& runner,
                                               const ExecuteOptions& options,
                                               const CacheStep& cache_step) {
    return GraphExecution(graph, runner, options, cache_step).run();
}

}  // namespace bekc
