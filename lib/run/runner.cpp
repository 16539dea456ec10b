#include "run/runner.hpp"

namespace bekc {

ProcessResult Runner::run_one(const Command& command) {
    auto results = run({command}, 1);
    return results.empty() ? ProcessResult{} : results.front();
}

std::expected<void, Error> ProcessRunner::write_file(const fs::path& path,
                                                     std::string_view content) {
    return write_atomic(path, content);
}

std::vector<ProcessResult> ProcessRunner::run(const std::vector<Command>& commands, int jobs,
                                              const ProgressCallback& on_event,
                                              const ParallelOptions& options) {
    return run_parallel(commands, jobs, on_event, options);
}

std::vector<ProcessResult> DryRunRunner::run(const std::vector<Command>& commands, int,
                                             const ProgressCallback& on_event,
                                             const ParallelOptions& options) {
    std::vector<ProcessResult> results(commands.size());
    for (size_t i = 0; i < commands.size(); ++i) {
        // One after the other: a command that may not start when its turn
        // comes never will (ParallelOptions::ready; the commands come in an
        // order that respects what they wait for).
        if (options.ready && options.ready(i) != Readiness::Start) continue;
        results[i].status = ProcessStatus::Exited;
        results[i].exit_code = 0;
        if (on_event) {
            on_event({ProgressEvent::Kind::Started, i, commands[i], nullptr});
            on_event({ProgressEvent::Kind::Finished, i, commands[i], &results[i]});
        }
    }
    return results;
}

}  // namespace bekc
