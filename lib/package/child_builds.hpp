// Child `bekc build` processes run side by side under one -j N: what the
// package prebuild (package/package_build.hpp) and the replay of a recording
// (package/replay.hpp) share. The children share the slots as make's recipes
// do: through make's jobserver under `make -jN`, else through one served
// here (run/jobserver.hpp); each runs its first command in the slot it was
// started in and every further one in a token of that jobserver.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/command.hpp"
#include "prep/build_context.hpp"
#include "run/jobserver.hpp"
#include "run/process.hpp"
#include "util/fs.hpp"

namespace bekc {

// This process's executable, which the children run; fatal when unknown.
fs::path own_executable();

// The slots the children share: make's, or a jobserver served here.
struct ChildSlots {
    JobSlots from_make;
    std::optional<JobSlots> served;

    JobSlots& slots() { return served ? *served : from_make; }
    // What the children's MAKEFLAGS must say when the slots are served here;
    // nullopt leaves theirs as it is (make's).
    std::optional<std::string> makeflags() const;
};

// The slots for `jobs` children. A recipe make named its jobserver to but did
// not hand it (no `+`) runs one child at a time, as make expects; with
// `verbose`, why make's jobserver is not used. `dry_run` serves nothing.
ChildSlots child_slots(int jobs, bool verbose, bool dry_run, const fs::path& cache_root,
                       const BuildContext& ctx);

// Runs `commands`, in the order they start, each in a slot of `slots`, with
// a line "[k/N] DESCRIPTION: done" on stderr as each finishes (unless
// `quiet`). `order[k]`: the index of commands[k] in the caller's own order;
// the results come back in that order. Throws on Ctrl-C.
std::vector<ProcessResult> run_children(Runner& runner, const std::vector<Command>& commands,
                                        const std::vector<size_t>& order, ChildSlots& slots,
                                        bool quiet);

// The --json object a child `bekc build --json` printed as its last line, or
// null when there is none.
nlohmann::json child_json(const ProcessResult& r);

// A child's output as a person reads it: without that --json object (a
// failed child prints one too, docs/cli.md, "Scripting"), ending in a
// newline unless empty.
std::string child_messages(const ProcessResult& r);

}  // namespace bekc
