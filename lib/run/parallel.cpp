#include "run/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace bekc {

namespace {

// Shared state of one run_parallel call. Each worker thread blocks in one
// run_process at a time, so `jobs` threads give exactly `jobs` processes.
class Scheduler {
  public:
    Scheduler(const std::vector<Command>& commands, const ProgressCallback& on_event,
              const ParallelOptions& options)
        : commands_(commands), on_event_(on_event), options_(options), results_(commands.size()) {}

    void work() {
        for (;;) {
            size_t index = next_.fetch_add(1);
            if (index >= commands_.size() || stopped_.load()) return;
            notify({ProgressEvent::Kind::Started, index, commands_[index], nullptr});
            ProcessResult result = run_process(commands_[index], options_.run);
            if (!result.ok() && !options_.keep_going) stopped_.store(true);
            results_[index] = std::move(result);
            notify({ProgressEvent::Kind::Finished, index, commands_[index], &results_[index]});
        }
    }

    std::vector<ProcessResult> take_results() { return std::move(results_); }

  private:
    void notify(const ProgressEvent& event) {
        if (!on_event_) return;
        std::lock_guard lock(callback_mutex_);
        on_event_(event);
    }

    const std::vector<Command>& commands_;
    const ProgressCallback& on_event_;
    const ParallelOptions& options_;
    std::vector<ProcessResult> results_;  // each slot written by one worker only
    std::atomic<size_t> next_{0};
    std::atomic<bool> stopped_{false};
    std::mutex callback_mutex_;
};

}  // namespace

std::vector<ProcessResult> run_parallel(const std::vector<Command>& commands, int jobs,
                                        const ProgressCallback& on_event,
                                        const ParallelOptions& options) {
    Scheduler scheduler(commands, on_event, options);
    size_t workers = std::min<size_t>(static_cast<size_t>(std::max(jobs, 1)), commands.size());
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < workers; ++i) threads.emplace_back([&scheduler] { scheduler.work(); });
    threads.clear();  // joins
    return scheduler.take_results();
}

}  // namespace bekc
