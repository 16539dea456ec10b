// Each CUDA input's compile split into nvcc's phases (plan/nvcc_phases.hpp),
// as `nvcc --dryrun` lists them. Asking nvcc is part of filling in a graph: its
// dry run names the build's own directories, which the planned graph holds as
// placeholders, and a hit never asks. It is asked once for each filled-in
// graph; a build that runs again (a module id other than predicted, a linker
// without --dependency-file) splits its new graph with the same answers.
#pragma once

#include <map>

#include "plan/build_graph.hpp"
#include "plan/nvcc_phases.hpp"
#include "prep/build_inputs.hpp"
#include "run/runner.hpp"
#include "store/compile_times.hpp"
#include "toolchain/tools.hpp"

namespace bekc {

// What nvcc's dry run listed for each CUDA input (by unit), its bare program
// names found in the PATH nvcc gives its tools. An input without one stays
// one nvcc process.
struct NvccPhasePlan {
    std::map<size_t, NvccPipeline> by_unit;
};

// Runs `nvcc --dryrun` through `runner` (also in a dry run: it writes
// nothing) for each CUDA compile of `graph`. Nothing when the split is off
// ($BEKC_SPLIT_NVCC=0, read through `tools`), and nothing for a compile with
// a launcher in front, whose flags ask for a device link, or whose dry run
// holds a command bekc does not run as nvcc would. The key's graph is never
// split: the phases follow from the compile's command and nvcc's identity,
// which the key holds.
NvccPhasePlan ask_nvcc_phases(const BuildGraph& graph, const BuildInputs& in, Runner& runner,
                              const ToolLookup& tools);

// `graph`'s CUDA compiles replaced by the phases `phases` holds for them.
// With `module_ids`, the module id each input's last compile had
// (store/compile_times.hpp) is predicted (SplitRequest::module_id).
void split_nvcc_compiles(BuildGraph& graph, const NvccPhasePlan& phases, const BuildInputs& in,
                         const CompileTimes* module_ids = nullptr);

}  // namespace bekc
