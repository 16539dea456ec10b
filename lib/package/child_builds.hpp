// Child `bekc build` processes run side by side under one -j N: what the
// package prebuild (package/package_build.hpp) and the replay of a recording
// (package/replay.hpp) share. The children share the slots as make's recipes
// do: through make's jobserver under `make -jN`, else through one served
// here (run/jobserver.hpp); each runs its first command in the slot it was
// started in and every further one in a token of that jobserver. Served
// here, a quarter of -j's slots are tokens from the start, not slots
// children start in: a module with compiles ready side by side (four
// architectures' cicc) takes them while the other modules each compile in
// their own slot.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/command.hpp"
#include "prep/build_context.hpp"
#include "run/jobserver.hpp"
#include "run/process.hpp"
#include "run/trace.hpp"
#include "store/compile_times.hpp"
#include "util/fs.hpp"

namespace bekc {

// This process's executable, which the children run; fatal when unknown.
fs::path own_executable();

// The slots the children share: make's, or a jobserver served here.
struct ChildSlots {
    JobSlots from_make;
    std::optional<JobSlots> served;
    // Served here for -j `jobs`: how many children run at once, a slot each;
    // the rest of the slots are the jobserver's tokens.
    static int children_for(int jobs) { return std::max(1, jobs - jobs / 4); }

    // How many children run at once, and the jobserver whose tokens start
    // more of them (make's; none when the slots are served here).
    int at_once() const { return served ? children_for(served->limit()) : from_make.count(); }
    JobSlots* tokens() { return served ? nullptr : from_make.jobserver(); }
    // What the children's MAKEFLAGS must say when the slots are served here;
    // nullopt leaves theirs as it is (make's).
    std::optional<std::string> makeflags() const;
};

// The slots for `jobs` children. A recipe make named its jobserver to but did
// not hand it (no `+`) runs one child at a time, as make expects; with
// `verbose`, why make's jobserver is not used. `dry_run` serves nothing.
ChildSlots child_slots(int jobs, bool verbose, bool dry_run, const fs::path& cache_root,
                       const BuildContext& ctx);

// --trace of a command that runs child builds (run/trace.hpp): each child
// writes its own trace (its --trace) into a directory made for this run,
// which only this user can reach, and the parent merges them into its trace,
// each child a process named as the child's lane names it. The directory is
// removed with this value.
class ChildTraces {
  public:
    // Nothing to do when `trace` is null; fatal when the directory cannot be
    // made.
    ChildTraces(Trace* trace, const PrivateDirPlaces& places);
    ~ChildTraces();
    ChildTraces(const ChildTraces&) = delete;
    ChildTraces& operator=(const ChildTraces&) = delete;

    Trace* trace() const { return trace_; }
    // The --trace of child `i` (in the caller's order); nullopt untraced.
    std::optional<std::string> file(size_t i) const;
    // Merges each child's trace, child `i`'s as a process named commands[i]'s
    // description. A child that wrote none (it did not start, or was killed)
    // is left out; one that is not a trace is a warning.
    void merge(const std::vector<Command>& commands) const;

  private:
    Trace* trace_;
    fs::path dir_;
};

// The order to start `commands` (child builds) in, and how long each took
// (store/compile_times.hpp): those that took longest last time first, under
// their `timing_names`; those never timed before them, the biggest inputs
// first (Command::inputs, from Command::cwd), a first build's guess at its
// longest (run/parallel.hpp, longest_first).
std::vector<size_t> start_order(const CompileTimes& times,
                                const std::vector<std::string>& timing_names,
                                const std::vector<Command>& commands);
// Remembers how long each child that succeeded took, and saves the memo.
void remember_times(CompileTimes& times, const std::vector<std::string>& timing_names,
                    const std::vector<ProcessResult>& results);

// Runs `commands`, in the order they start, each in a slot of `slots`, with
// a line "[k/N] DESCRIPTION: done" on stderr as each finishes (unless
// `quiet`). `order[k]`: the index of commands[k] in the caller's own order;
// the results come back in that order. Throws on Ctrl-C. With `traces`, each
// child is an event in a lane of the parent's trace, `modules[i]` (in the
// caller's order) the module it builds, with its cache outcome.
std::vector<ProcessResult> run_children(Runner& runner, const std::vector<Command>& commands,
                                        const std::vector<size_t>& order, ChildSlots& slots,
                                        bool quiet, const ChildTraces* traces = nullptr,
                                        const std::vector<std::string>& modules = {});

// One child run alone (`bekc pack` builds its sources one after the
// other), with its event in a lane of `traces`' trace, as run_children's.
ProcessResult run_child(Runner& runner, const Command& command, const ChildTraces& traces,
                        const std::string& module);

// The --json object a child `bekc build --json` printed as its last line, or
// null when there is none.
nlohmann::json child_json(const ProcessResult& r);

// A child's output as a person reads it: without that --json object (a
// failed child prints one too, docs/cli.md, "Scripting"), ending in a
// newline unless empty.
std::string child_messages(const ProcessResult& r);

}  // namespace bekc
