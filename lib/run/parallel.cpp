#include "run/parallel.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>

#include "run/interrupt.hpp"

namespace bekc {

namespace {

// Shared state of one run_parallel call. Commands start in input order,
// among those that may (ParallelOptions::ready), each once its slots are
// free: the slots of the commands running never add up to more than `jobs`
// and the jobserver tokens held. Each worker thread blocks in one
// run_process at a time.
class Scheduler {
  public:
    Scheduler(const std::vector<Command>& commands, int jobs, const ProgressCallback& on_event,
              const ParallelOptions& options)
        : commands_(commands),
          on_event_(on_event),
          options_(options),
          results_(commands.size()),
          started_(commands.size(), false),
          left_(commands.size()),
          free_(jobs) {}

    void work() {
        for (;;) {
            size_t index;
            int slots;
            {
                std::unique_lock lock(slots_mutex_);
                // After SIGINT or SIGTERM nothing more starts: the running
                // commands are being stopped (run/interrupt.hpp), and each
                // that ends wakes the others here.
                auto decided = [&] {
                    if (stopped_ || interrupted_by() != 0) return true;
                    next_ = pick();
                    return next_ != kWait;
                };
                // A token another process gives back wakes nobody here: one
                // waiting thread looks again now and then while a command of
                // ours runs; the others wait to be woken.
                while (!decided()) {
                    if (options_.tokens && !polling_) {
                        polling_ = true;
                        slots_free_.wait_for(lock, kTokenPoll);
                        // Should this one start a command, it wakes the others
                        // (below), and one of them polls.
                        polling_ = false;
                    } else {
                        slots_free_.wait(lock);
                    }
                }
                if (stopped_ || interrupted_by() != 0 || next_ == kNone) {
                    give_back_spare();
                    return;
                }
                index = next_;
                started_[index] = true;
                --left_;
                ++running_;
                slots = slots_of(index);
                free_ -= slots;
                // Under the lock, so that listeners see starts in order.
                notify({ProgressEvent::Kind::Started, index, commands_[index], nullptr});
            }
            slots_free_.notify_all();  // the command after it may fit too
            results_[index] = run_process(commands_[index], options_.run);
            // Reported before its slots are free, so that a listener counting
            // Started and Finished never sees more than the slots at once,
            // and what it changes decides what starts next.
            notify({ProgressEvent::Kind::Finished, index, commands_[index], &results_[index]});
            {
                std::lock_guard lock(slots_mutex_);
                free_ += slots;
                --running_;
                if (!results_[index].ok() && !options_.keep_going) stopped_ = true;
                if (stopped_ || left_ == 0) give_back_spare();
            }
            slots_free_.notify_all();
        }
    }

    std::vector<ProcessResult> take_results() { return std::move(results_); }

  private:
    void notify(const ProgressEvent& event) {
        if (!on_event_) return;
        std::lock_guard lock(callback_mutex_);
        on_event_(event);
    }

    int slots_of(size_t index) const { return std::clamp(commands_[index].slots, 1, total_); }

    static constexpr size_t kWait = static_cast<size_t>(-1);  // none may start yet
    static constexpr size_t kNone = kWait - 1;                // none ever will

    // The command to start now: the first, in input order, that may start
    // (those never to start are marked as started), if its slots are free
    // (the ones after it wait behind it, so that a wide command, nvcc with
    // --threads started first as the longest, is never overtaken by narrow
    // ones). kNone when nothing is left, or nothing runs and every command
    // left waits. Under the lock.
    size_t pick() {
        for (size_t i = 0; i < commands_.size(); ++i) {
            if (started_[i]) continue;
            Readiness r = options_.ready ? options_.ready(i) : Readiness::Start;
            if (r == Readiness::Skip) {
                started_[i] = true;
                --left_;
                continue;
            }
            if (r == Readiness::Start) return fits(slots_of(i)) ? i : kWait;
        }
        if (left_ == 0 || running_ == 0) return kNone;
        give_back_spare();  // nothing may start until a command finishes
        return kWait;
    }

    // Whether `slots` are free, taking jobserver tokens for what is missing.
    // Under the lock.
    bool fits(int slots) {
        while (free_ < slots && options_.tokens && options_.tokens->try_take()) ++free_;
        return free_ >= slots;
    }

    // Tokens not in use go back to the jobserver, for other builds: once
    // nothing is left to start. Under the lock.
    void give_back_spare() {
        while (options_.tokens && options_.tokens->tokens_held() > 0 && free_ > 0) {
            options_.tokens->give_back();
            --free_;
        }
    }

    const std::vector<Command>& commands_;
    const ProgressCallback& on_event_;
    const ParallelOptions& options_;
    std::vector<ProcessResult> results_;  // each written by one worker only
    std::mutex slots_mutex_;
    std::condition_variable slots_free_;
    std::vector<bool> started_;  // or never to start
    size_t left_;                // not started
    size_t running_ = 0;
    size_t next_ = kWait;
    bool stopped_ = false;
    bool polling_ = false;  // a thread waits with a timeout, for tokens
    int free_;
    const int total_ = free_;
    std::mutex callback_mutex_;
    static constexpr std::chrono::milliseconds kTokenPoll{20};
};

}  // namespace

std::vector<ProcessResult> run_parallel(const std::vector<Command>& commands, int jobs,
                                        const ProgressCallback& on_event,
                                        const ParallelOptions& options) {
    jobs = std::max(jobs, 1);
    Scheduler scheduler(commands, jobs, on_event, options);
    // A thread per command that may run at once: under a jobserver, as many
    // as the build's own -j allows, whatever make has free now.
    const int at_once = options.tokens ? std::max(options.tokens->limit(), jobs) : jobs;
    size_t workers = std::min<size_t>(static_cast<size_t>(at_once), commands.size());
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < workers; ++i) threads.emplace_back([&scheduler] { scheduler.work(); });
    threads.clear();  // joins
    return scheduler.take_results();
}

std::vector<size_t> longest_first(size_t count,
                                  const std::function<std::optional<double>(size_t)>& seconds,
                                  const std::function<double(size_t)>& guess) {
    std::vector<size_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::vector<std::optional<double>> s(count);
    std::vector<double> g(count, 0.0);
    for (size_t i = 0; i < count; ++i) {
        s[i] = seconds(i);
        if (!s[i] && guess) g[i] = guess(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (!s[a] && !s[b]) return g[a] > g[b];
        if (!s[a] || !s[b]) return !s[a];
        return *s[a] > *s[b];
    });
    return order;
}

}  // namespace bekc
