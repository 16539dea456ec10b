// `bekc build` in six phases, each a function returning one value:
//   prepare (prep/prepare.hpp)    BuildInputs: options checked, inputs
//                                 scanned, tools found, archs chosen
//   plan (graph/plan.hpp)         PlannedBuild: the graph with placeholder
//                                 directories, the targets, the keys
//   look_up (driver/phases.hpp)   LookUp: a hit, or a miss holding the lock
//   execute (driver/phases.hpp)   Executed: the graph filled in and run in a
//                                 private directory
//   publish (driver/phases.hpp)   Published: the entry under the full key
//   deliver (driver/phases.hpp)   Delivered: the manifest and library, -o, --depfile
// run_build chains them and is where a failure ends the run (FatalError);
// a hit goes from look_up to deliver. See docs/ARCHITECTURE.md for the
// stages and the build graph's steps.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/plan.hpp"
#include "prep/build_context.hpp"
#include "prep/build_inputs.hpp"
#include "prep/build_options.hpp"
#include "prep/reporter.hpp"
#include "util/fs.hpp"

namespace bekc {

struct BuildResult {
    fs::path manifest;  // the one the user should load (cache, or -o copy)
    fs::path library;
    bool cache_hit = false;
    bool remote_hit = false;  // the entry came from --remote-cache
    std::vector<std::string> targets;
    double seconds_total = 0, seconds_compile = 0;
    std::string miss_reason;  // why the direct lookup missed, for -v and --json
    // The direct key and the record it hashes (KeyBuilder::explain; read it
    // with KeyBuilder::parts), for logs that say which part changed.
    std::string direct_key, direct_key_record;
    // The entry's key, and the portable key it is recorded under
    // (graph/keys.hpp), which `bekc pack` reads from --json.
    std::string key, portable_key;
    // The read-only cache the hit came from (empty: the own cache), and what
    // a hit through the portable key checked in place of the toolchain.
    fs::path layer;
    std::string checked;
};

// Runs the whole build; diagnostics and progress go to stderr, and the
// caller prints the result to stdout.
BuildResult run_build(const BuildOptions& options);
BuildResult run_build(const BuildOptions& options, BuildContext& context);

// The phases of a hit and nothing else: prepare, plan, the local cache
// (driver/phases.hpp, find_local) and deliver. The result of run_build on a
// local hit; nullopt on a miss, before any lock is taken or anything is
// written. For options that plan writes nothing for (no --explain-key,
// --compile-commands or --dry-run); the in-process lookup
// (warm/warm_lookup.hpp) answers with it.
std::optional<BuildResult> run_build_if_cached(const BuildOptions& options, BuildContext& context,
                                               const Reporter& report);

// The first two phases as run_build runs them, a failure thrown as
// FatalError: prepare (prep/prepare.hpp) and plan (graph/plan.hpp).
BuildInputs prepare_build(const BuildOptions& options, BuildContext& context);
PlannedBuild plan_build(const BuildInputs& in, const BuildOptions& o);

// What run_build does between plan and look-up, in the open: --explain-key
// prints the planned graph's key record (stdout; the nvcc chosen, stderr),
// and --compile-commands writes its file (not in a dry run), with the
// runtime headers it names.
void explain_plan(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned);
void write_planned_compile_commands(const BuildInputs& in, const BuildOptions& o);

}  // namespace bekc
