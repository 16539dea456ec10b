// From the prepared inputs to the build graph (plan/build_graph.hpp): the
// wrappers rendered, the paths chosen, the runtime steps added when the
// cache lacks their results. The real build and --dry-run plan with
// graph_paths(); the direct key plans the same graph with placeholders
// (key_graph), so it follows every command by construction.
#pragma once

#include "plan/build_graph.hpp"
#include "prep/build_inputs.hpp"
#include "run/runner.hpp"
#include "store/compile_times.hpp"
#include "toolchain/tools.hpp"

namespace bekc {

struct GraphPaths {
    fs::path build_dir;        // wrappers, objects, the library
    fs::path runtime_include;  // the cache's runtime headers
    fs::path runtime_object;   // the cache's bekc_rt.o
    bool runtime_headers_ready = false;
    bool runtime_object_ready = false;
    // Give nvcc plain-named links for directories it cannot take as they are
    // (toolchain/safe_paths.hpp). Creates the links, so never in a dry run.
    bool nvcc_safe_paths = false;
    bool launcher = true;      // put the launcher in front of the compiles
    bool link_depfile = true;  // ask the linker for --dependency-file
    // nvcc's --threads for each CUDA compile (plan/compile_plan.hpp); the key
    // graph keeps 1: threads never change the output.
    int device_threads = 1;
};

// nvcc's --threads for a build of `in` with `jobs` slots: the slots the
// first wave's compiles (each input, and bekc_rt.o when `runtime_object`
// must be compiled) leave each, at most its architectures plus PTX.
int device_threads_for(const BuildInputs& in, int jobs, bool runtime_object);

// The paths of a build for this cache. `build_dir` is the private directory
// named by the direct key.
GraphPaths graph_paths(const BuildInputs& in, const fs::path& build_dir);

// The graph of `in` in these directories. A wrapper that cannot be written
// (a source path an #include cannot name, two exports of one handler), or a
// link nvcc needs that cannot be made, is the Error.
std::expected<BuildGraph, Error> plan_graph(const BuildInputs& in, const GraphPaths& paths);

// Each CUDA input's compile in `graph` split into nvcc's phases
// (plan/nvcc_phases.hpp), as `nvcc --dryrun` (run through `runner`, also
// in a dry run: it writes nothing) lists them; a bare program name found in
// the PATH nvcc gives its tools. A compile stays one nvcc process when the
// split is off ($BEKC_SPLIT_NVCC=0), a launcher is in front, its flags ask
// for a device link, or its dry run holds a command bekc does not run as
// nvcc would. The key graph is never split: the phases follow from the
// compile's command and nvcc's identity, which the key holds.
// With `module_ids`, the module id each input's last compile had
// (store/compile_times.hpp) is predicted (SplitRequest::module_id).
void split_nvcc_compiles(BuildGraph& graph, const BuildInputs& in, Runner& runner,
                         const ToolLookup& tools, const CompileTimes* module_ids = nullptr);

// The name an input goes by in the build's memos and wrappers: its absolute,
// normal path.
std::string input_name(const fs::path& input);

// What nvcc's front ends name input `unit`, compiled from `wrapper`, by
// (PlanUnit::source_path, and SplitRequest::orig_src_path when the compile
// is split): the input's own directory with the wrapper's file name,
// relative to $BEKC_BASE_DIR under it ("./kernels/0_k.bekc.cu"). The
// module id derived from it is then the same from build to build, and
// from checkout to checkout, so one key gives one library. A name nvcc's
// shell could not take as it is (white space, a comma, shell syntax) is
// replaced by a digest of it.
std::string nvcc_source_path(const BuildInputs& in, size_t unit, const fs::path& wrapper);

// The graph with the directories that differ between builds and machines as
// placeholders, without the launcher, and with every step (the runtime
// steps whether or not the cache has their results).
std::expected<BuildGraph, Error> key_graph(const BuildInputs& in);

// The start of the name of the private directory a build of `direct_key` for
// this cache compiles in; util/fs private_temp_dir adds a unique suffix.
fs::path build_dir_name(const BuildInputs& in, const std::string& direct_key);

}  // namespace bekc
