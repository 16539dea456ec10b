#include "run/execute.hpp"

#include <vector>

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
            const Step& s = steps_[i];
            if (s.runs()) {
                wave.push_back(i);
                continue;
            }
            echo(s);
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
            mark_done(i);
        }
        return wave;
    }

    // The wave's steps less those whose results the cache had
    // (ExecuteOptions::reuse), which are done.
    std::vector<size_t> without_reused(std::vector<size_t> wave) {
        if (!options_.reuse) return wave;
        std::vector<size_t> left;
        for (size_t i : wave) {
            if (!options_.reuse(steps_[i])) {
                left.push_back(i);
                continue;
            }
            if (options_.echo)
                std::fprintf(options_.echo, "# reused: %s\n",
                             steps_[i].command.description.c_str());
            --processes_;
            mark_done(i);
        }
        return left;
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
        auto on_event = [&](const ProgressEvent& e) {
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
