#include "run/execute.hpp"

#include <vector>

#include "run/parallel.hpp"

namespace bekc {

std::expected<void, StepFailure> execute_graph(const BuildGraph& graph, Runner& runner,
                                               const ExecuteOptions& options,
                                               const CacheStep& cache_step) {
    const auto& steps = graph.steps;
    std::vector<bool> done(steps.size(), false);
    size_t processes = 0, started = 0;
    int waves = 0;
    for (const auto& s : steps) processes += s.runs() ? 1 : 0;
    auto echo = [&](const Step& s) {
        if (options.echo) std::fprintf(options.echo, "%s\n", describe_step(s).c_str());
    };
    for (size_t left = steps.size(); left > 0;) {
        // A wave: every step whose predecessors have all finished.
        std::vector<size_t> ready;
        for (size_t i = 0; i < steps.size(); ++i) {
            if (done[i]) continue;
            bool ok = true;
            for (size_t a : steps[i].after) ok = ok && a < i && done[a];
            if (ok) ready.push_back(i);
        }
        if (ready.empty()) {
            StepFailure f;
            f.error = "internal error: the build graph has a cycle";
            return std::unexpected(f);
        }
        std::vector<size_t> run;
        for (size_t i : ready) {
            const Step& s = steps[i];
            if (s.runs()) {
                run.push_back(i);
                continue;
            }
            echo(s);
            if (s.kind == StepKind::WriteWrapper) {
                for (const auto& out : s.command.outputs)
                    if (auto w = runner.write_file(out, s.content); !w)
                        return std::unexpected(StepFailure{i, {}, w.error().message});
            } else if (cache_step) {
                cache_step(s);
            }
            done[i] = true;
            --left;
        }
        if (run.empty()) continue;
        if (options.expected_seconds) {
            std::vector<size_t> order = longest_first(
                run.size(), [&](size_t k) { return options.expected_seconds(steps[run[k]]); });
            std::vector<size_t> sorted;
            for (size_t k : order) sorted.push_back(run[k]);
            run = std::move(sorted);
        }
        if (options.echo) {
            int slots = 0;
            for (size_t i : run) slots += steps[i].command.slots;
            // More slots than -j: the commands start in this order, each
            // once its slots are free (run/parallel.hpp), not all at once.
            const bool queued = slots > options.jobs;
            std::fprintf(options.echo, "# wave %d: %zu %s, %d %s%s -j %d\n", ++waves, run.size(),
                         run.size() == 1 ? "command"
                         : queued        ? "commands"
                                         : "commands side by side",
                         slots, slots == 1 ? "slot" : "slots",
                         queued ? ", queued within" : " within", options.jobs);
        }
        std::vector<Command> commands;
        for (size_t i : run) commands.push_back(steps[i].command);
        auto on_event = [&](const ProgressEvent& e) {
            if (e.kind != ProgressEvent::Kind::Started) return;
            ++started;
            if (options.echo)
                echo(steps[run[e.index]]);
            else if (options.progress)
                std::fprintf(stderr, "[%zu/%zu] %s\n", started, processes,
                             e.command.description.c_str());
        };
        auto results = runner.run(commands, options.jobs, on_event);
        for (size_t k = 0; k < run.size(); ++k) {
            const ProcessResult& r = k < results.size() ? results[k] : ProcessResult{};
            if (!r.ok() && r.status != ProcessStatus::NotRun)
                return std::unexpected(StepFailure{run[k], r, {}});
        }
        for (size_t k = 0; k < run.size(); ++k) {
            if (k >= results.size() || !results[k].ok())
                return std::unexpected(
                    StepFailure{run[k], k < results.size() ? results[k] : ProcessResult{}, {}});
            const Step& s = steps[run[k]];
            if (options.finished) options.finished(s, results[k]);
            if (s.kind == StepKind::RuntimeObject && cache_step) cache_step(s);
            done[run[k]] = true;
            --left;
        }
    }
    return {};
}

}  // namespace bekc
