// Each CUDA input's compile split into nvcc's phases (plan/nvcc_phases.hpp),
// as `nvcc --dryrun` lists them. Asking nvcc is part of filling in a graph: its
// dry run names the build's own directories, which the planned graph holds as
// placeholders, and a hit never asks. It is asked once for each filled-in
// graph; a build that runs again (a linker without --dependency-file) splits
// its new graph with the same answers.
#pragma once

#include <map>

#include "plan/build_graph.hpp"
#include "plan/nvcc_phases.hpp"
#include "prep/build_inputs.hpp"
#include "run/runner.hpp"
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

// The module id bekc gives a CUDA input whose compile is split
// (SplitRequest::module_id): "_<16 hex digits>_<file name>", the digits from
// the SHA-256 of the module's name and of the name cudafe++ and cicc get for
// the input (`orig_src_path`: nvcc_source_path, its directory and the
// wrapper's name, which holds its place among the inputs). Both are in the
// build's key, so a key always means one id. An input gets the same id in
// every build and every cache, edited or not (its internal device names,
// and so the step results an edit leaves as they were, stay the same), and
// another input, or the same one in another module, gets another (the
// anonymous namespaces of two modules never share a name).
std::string nvcc_module_id(const std::string& module, const std::string& orig_src_path,
                           const fs::path& input);

// `graph`'s CUDA compiles replaced by the phases `phases` holds for them,
// each with its module id (nvcc_module_id).
void split_nvcc_compiles(BuildGraph& graph, const NvccPhasePlan& phases, const BuildInputs& in);

}  // namespace bekc
