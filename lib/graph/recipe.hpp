// From the prepared inputs to the build graph (plan/build_graph.hpp), in two
// steps. graph_recipe decides once, from BuildInputs, everything the graph is
// made of but its directories: the wrappers' requests, the compile and link
// requests, the toolkit's directories, the launcher. fill_in lays the recipe
// out with a set of directories, and nothing else: with the placeholders
// (placeholder_dirs), it is the graph the direct key reads and --explain-key
// prints; with a build's own (build_dirs), the graph a build executes and
// --dry-run prints. So the three follow one another by construction.
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/wrapper.hpp"
#include "plan/build_graph.hpp"
#include "prep/build_inputs.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

// The plain-named links nvcc gets for the directories it cannot take as they
// are (toolchain/safe_paths.hpp): the directory itself where it can.
struct NvccLinks {
    fs::path runtime_include;     // for GraphDirs::runtime_include
    fs::path runtime_object_dir;  // for GraphDirs::runtime_object's directory
    // For the include directories of the flags, the toolkit's and XLA's.
    std::map<std::string, std::string> dirs;
    fs::path cxx;  // the host compiler as nvcc's -ccbin
};

// The directories a recipe is filled in with, and what else differs from one
// run of the same graph to the next.
struct GraphDirs {
    fs::path build_dir;        // wrappers, objects, the library
    fs::path runtime_include;  // the cache's runtime headers
    fs::path runtime_object;   // the cache's bekc_rt.o
    // The cache has them: the graph has no step that writes them.
    bool runtime_headers_ready = false;
    bool runtime_object_ready = false;
    bool launcher = true;      // put the launcher in front of the compiles
    bool link_depfile = true;  // ask the linker for --dependency-file
    // nvcc's --threads for each CUDA compile (plan/compile_plan.hpp); the
    // placeholders keep 1: threads never change the output.
    int device_threads = 1;
    // A CUDA build's links for nvcc (make_nvcc_links); unset: every
    // directory as it is (the key's graph and a dry run, which create
    // nothing).
    std::optional<NvccLinks> nvcc_links;
};

// What a graph is made of but its directories, decided once.
struct GraphRecipe {
    // The compiles and the link, with every field that names a directory
    // left for fill_in: each unit's wrapper is its file name alone.
    GraphRequest request;
    // The wrappers to render, one per unit; wrapper_name is the file name.
    std::vector<WrapperRequest> wrappers;
    std::string library_file;          // lib<name>.so
    std::optional<fs::path> launcher;  // BuildInputs::launcher
    bool any_cuda = false;             // nvcc compiles or links
};

// The recipe of `in`'s graph.
GraphRecipe graph_recipe(const BuildInputs& in);

// The recipe laid out with `dirs`: the wrappers rendered for their paths in
// dirs.build_dir, every command with its directories, the runtime steps the
// cache lacks, the launcher when asked for. Pure: reads, writes and runs
// nothing. A wrapper that cannot be rendered (a source path an #include
// cannot name, two exports of one handler) is the Error, whatever the
// directories: planning finds it first.
std::expected<BuildGraph, Error> fill_in(const GraphRecipe& recipe, const GraphDirs& dirs);

// The directories that differ between builds and machines as placeholders
// ("/$BEKC_BUILD", "/$BEKC_RUNTIME/..."), without the launcher, and with
// every step (the runtime steps whether or not the cache has their results).
GraphDirs placeholder_dirs();

// A build's own directories for this cache: `build_dir` is the private
// directory named by the direct key; the runtime's as the cache holds them.
GraphDirs build_dirs(const BuildInputs& in, const fs::path& build_dir);

// The links nvcc needs to read the recipe's directories and `dirs`' runtime
// directories, made (atomically) in this user's private directory in
// `places`. A link that cannot be made is the Error.
std::expected<NvccLinks, Error> make_nvcc_links(const GraphRecipe& recipe, const GraphDirs& dirs,
                                                const PrivateDirPlaces& places);

// nvcc's --threads for a build of `in` with `jobs` slots: the slots the
// first wave's compiles (each input, and bekc_rt.o when `runtime_object`
// must be compiled) leave each, at most its architectures plus PTX.
int device_threads_for(const BuildInputs& in, int jobs, bool runtime_object);

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

// The start of the name of the private directory a build of `direct_key` for
// this cache compiles in; util/fs private_temp_dir adds a unique suffix.
fs::path build_dir_name(const BuildInputs& in, const std::string& direct_key);

}  // namespace bekc
