#include "run/execute.hpp"

#include <vector>

#include "plan/command.hpp"
#include "run/parallel.hpp"

namespace bekc {

namespace {

// One execution of a graph: which steps are done, and the counts its
// progress lines show.
class GraphExecution {
  public:
    GraphExecution(const BuildGraph& graph, Runner& runner, const ExecuteOptions& options,
                   const CacheStep& cache_step)
        : steps_(graph.steps),
          runner_(runner),
          options_(options),
          cache_step_(cache_step),
          done_(steps_.size(), false),
          cache_outcome_(steps_.size(), StepCacheOutcome::NotKept),
          left_(steps_.size()) {
        for (const auto& s : steps_) processes_ += s.runs() ? 1 : 0;
    }

    std::expected<void, StepFailure> run() {
        while (left_ > 0) {
            std::vector<size_t> ready = ready_steps();
            if (ready.empty()) {
                StepFailure f;
                f.error = "internal error: the build graph has a cycle";
                return std::unexpected(f);
            }
            auto wave = finish_in_process(ready);
            if (!wave) return std::unexpected(wave.error());
            *wave = without_reused(std::move(*wave));
            if (wave->empty()) continue;
            if (auto ran = run_wave(longest_first(*wave)); !ran) return ran;
        }
        return {};
    }

  private:
    void echo(const Step& s) const {
        if (options_.echo) std::fprintf(options_.echo, "%s\n", describe_step(s).c_str());
    }

    void mark_done(size_t i) {
        done_[i] = true;
        --left_;
    }

    // A wave: every step whose predecessors have all finished.
    std::vector<size_t> ready_steps() const {
        std::vector<size_t> ready;
        for (size_t i = 0; i < steps_.size(); ++i) {
            if (done_[i]) continue;
            bool ok = true;
            for (size_t a : steps_[i].after) ok = ok && a < i && done_[a];
            if (ok) ready.push_back(i);
        }
        return ready;
    }

    // Does the steps of `ready` that run no process (the wrappers' writes,
    // the cache's steps); returns the others.
    std::expected<std::vector<size_t>, StepFailure> finish_in_process(
        const std::vector<size_t>& ready) {
        std::vector<size_t> wave;
        for (size_t i : ready) {
            if (steps_[i].runs()) {
                wave.push_back(i);
                continue;
            }
            echo(steps_[i]);
            const auto start = options_.trace ? TraceClock::now() : TraceClock::time_point{};
            auto done = run_in_process(i);
            if (options_.trace) trace_in_a_lane(i, start, nullptr, done ? "" : done.error().error);
            if (!done) return std::unexpected(done.error());
            mark_done(i);
        }
        return wave;
    }

    // A step that runs no process: a write, a check, a step of the cache's.
    std::expected<void, StepFailure> run_in_process(size_t i) {
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
        } else if (s.kind == StepKind::Check) {
            if (auto differ = check_same(s); !differ.empty() && runner_.executes())
                return std::unexpected(StepFailure{i, {}, differ});
        } else if (cache_step_) {
            cache_step_(s);
        }
        return {};
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

    // A step done in this thread (between waves, so every lane is free),
    // from `start` to now.
    void trace_in_a_lane(size_t i, TraceClock::time_point start, const ProcessResult* result,
                         const std::string& error) const {
        const int lane = options_.trace->take_lane();
        trace_step(i, lane, start, step_args(i, result, error));
        options_.trace->give_lane(lane);
    }

    // A Check step: empty when its files hold the same bytes, else why not.
    static std::string check_same(const Step& s) {
        std::optional<std::string> first;
        for (const auto& f : s.command.inputs) {
            auto text = read_file(f);
            if (!text) return text.error().message;
            if (!first)
                first = std::move(*text);
            else if (*first != *text)
                return f + " differs from " + s.command.inputs.front();
        }
        return {};
    }

    // The wave's steps less those whose results the cache had
    // (ExecuteOptions::reuse), which are done.
    std::vector<size_t> without_reused(std::vector<size_t> wave) {
        if (!options_.reuse || wave.empty()) return wave;
        const auto looking = options_.trace ? TraceClock::now() : TraceClock::time_point{};
        std::vector<size_t> left;
        for (size_t i : wave) {
            const auto start = options_.trace ? TraceClock::now() : TraceClock::time_point{};
            cache_outcome_[i] = options_.reuse(steps_[i]);
            if (cache_outcome_[i] != StepCacheOutcome::Hit) {
                left.push_back(i);
                continue;
            }
            if (options_.trace) trace_in_a_lane(i, start, nullptr, "");
            if (options_.echo)
                std::fprintf(options_.echo, "# reused: %s\n",
                             steps_[i].command.description.c_str());
            --processes_;
            mark_done(i);
        }
        if (options_.trace) trace_look_ups(wave, looking);
        return left;
    }

    // --trace: the step cache's look-ups of a wave, on the build's own
    // thread, when it keeps any of the wave's steps.
    void trace_look_ups(const std::vector<size_t>& wave, TraceClock::time_point start) const {
        int hits = 0, misses = 0;
        for (size_t i : wave) {
            hits += cache_outcome_[i] == StepCacheOutcome::Hit ? 1 : 0;
            misses += cache_outcome_[i] == StepCacheOutcome::Miss ? 1 : 0;
        }
        if (hits + misses > 0)
            options_.trace->span("step cache", "step-cache", start, TraceClock::now(),
                                 {{"hits", hits}, {"misses", misses}});
    }

    // The wave's steps, those expected to take longest first.
    std::vector<size_t> longest_first(std::vector<size_t> wave) const {
        if (!options_.expected_seconds) return wave;
        std::vector<size_t> order = bekc::longest_first(
            wave.size(), [&](size_t k) { return options_.expected_seconds(steps_[wave[k]]); });
        std::vector<size_t> sorted;
        for (size_t k : order) sorted.push_back(wave[k]);
        return sorted;
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

    // "# wave 2: 3 commands side by side, 3 slots within -j 4".
    void announce(const std::vector<size_t>& wave) {
        if (!options_.echo) return;
        int slots = 0;
        for (size_t i : wave) slots += steps_[i].command.slots;
        // More slots than -j: the commands start in this order, each
        // once its slots are free (run/parallel.hpp), not all at once.
        const bool queued = slots > options_.jobs && !options_.tokens;
        std::fprintf(options_.echo, "# wave %d: %zu %s, %d %s%s -j %d%s\n", ++waves_, wave.size(),
                     wave.size() == 1 ? "command"
                     : queued         ? "commands"
                                      : "commands side by side",
                     slots, slots == 1 ? "slot" : "slots", queued ? ", queued within" : " within",
                     options_.jobs, options_.tokens ? " and the jobserver's tokens" : "");
    }

    // Runs the wave's processes; the first that failed (one that ran before
    // one the failure left unstarted), or none.
    std::expected<void, StepFailure> run_wave(const std::vector<size_t>& wave) {
        announce(wave);
        std::vector<Command> commands;
        for (size_t i : wave) commands.push_back(steps_[i].command);
        // --trace: the lane each command took, and when it started.
        std::vector<int> lanes(options_.trace ? wave.size() : 0);
        std::vector<TraceClock::time_point> starts(lanes.size());
        auto on_event = [&](const ProgressEvent& e) {
            if (options_.trace) trace_event(wave[e.index], e, lanes[e.index], starts[e.index]);
            if (e.kind != ProgressEvent::Kind::Started) return;
            ++started_;
            if (options_.echo)
                echo(steps_[wave[e.index]]);
            else if (options_.progress)
                std::fprintf(stderr, "[%zu/%zu] %s\n", started_, processes_,
                             e.command.description.c_str());
        };
        ParallelOptions po;
        po.tokens = options_.tokens;
        auto results = runner_.run(commands, options_.jobs, on_event, po);
        for (size_t k = 0; k < wave.size(); ++k) {
            const ProcessResult& r = k < results.size() ? results[k] : ProcessResult{};
            if (!r.ok() && r.status != ProcessStatus::NotRun)
                return std::unexpected(StepFailure{wave[k], r, {}});
        }
        for (size_t k = 0; k < wave.size(); ++k) {
            if (k >= results.size() || !results[k].ok())
                return std::unexpected(
                    StepFailure{wave[k], k < results.size() ? results[k] : ProcessResult{}, {}});
            const Step& s = steps_[wave[k]];
            if (options_.finished) options_.finished(s, results[k]);
            if (s.kind == StepKind::RuntimeObject && cache_step_) cache_step_(s);
            mark_done(wave[k]);
        }
        return {};
    }

    const std::vector<Step>& steps_;
    Runner& runner_;
    const ExecuteOptions& options_;
    const CacheStep& cache_step_;
    std::vector<bool> done_;
    std::vector<StepCacheOutcome> cache_outcome_;  // each step's, as reuse said
    size_t left_, processes_ = 0, started_ = 0;
    int waves_ = 0;
};

}  // namespace

std::expected<void, StepFailure> execute_graph(const BuildGraph& graph, Runner& runner,
                                               const ExecuteOptions& options,
                                               const CacheStep& cache_step) {
    return GraphExecution(graph, runner, options, cache_step).run();
}

}  // namespace bekc
