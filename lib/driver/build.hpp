// `bekc build` in six phases, each a function returning one value:
//   prepare (prep/prepare.hpp)        BuildInputs: options checked, inputs
//                                       scanned, tools found, archs chosen
//   plan (here)                         PlannedBuild: targets, the direct key
//   look_up (driver/phases.hpp)         LookUp: a hit, or a miss holding the lock
//   execute (driver/phases.hpp)         Executed: the graph run in a private directory
//   publish (driver/phases.hpp)         Published: the entry under the full key
//   deliver (driver/phases.hpp)         Delivered: the manifest and library, -o, --depfile
// run_build chains them; a hit goes from look_up to deliver. See
// docs/ARCHITECTURE.md for the stages and the build graph's steps.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// The second phase: what the build makes and the direct key it is known by.
struct PlannedBuild {
    std::vector<std::string> targets;  // the XLA target of every exported function
    // The direct key and the record it hashes (KeyBuilder::explain).
    std::string direct_key, direct_key_record;
    // The portable key (graph/keys.hpp): all a plan has when no toolchain
    // is found (BuildInputs::toolchain_missing), and the direct key is empty.
    std::string portable_key;
    // The start of the private build directory's name (plan_build.hpp).
    std::string dir_name;
};

// Prints the key's record with --explain-key and writes
// --compile-commands (not in a dry run).
PlannedBuild plan(const BuildInputs& in, const BuildOptions& o);

// The first stage: options checked, inputs read and scanned, tools found and
// asked their versions, archs chosen. Everything the graph and the key read.
BuildInputs prepare_build(const BuildOptions& options, BuildContext& context);

}  // namespace bekc
