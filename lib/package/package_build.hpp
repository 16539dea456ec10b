// `bekc build <package dir>`: every kernel file of an installed Python
// package (brainevent's, say) into the cache in one command, each under the
// module name the package itself loads it with, so the package's first use of
// each op is a cache hit instead of a compile.
//
// A package directory is one with `include/brainevent/common.h` and no kernel
// source directly in it. What is built, under which names, and why a file is
// only checked is package/package_plan.hpp's. Each module becomes its own build:
// `bekc build FILE --name=NAME -I <package>/include --xla-include=<jaxlib>`,
// the same command (and so the same cache key) that bekc's Python loaders
// give for the package's `load_cuda_file(FILE, name=NAME)`. XLA's headers are
// those of the jaxlib installed beside the package (the same site-packages)
// when there is one, as the Python that imports the package would find them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "package/child_builds.hpp"
#include "package/package_plan.hpp"
#include "plan/command.hpp"
#include "prep/build_context.hpp"
#include "prep/build_options.hpp"
#include "util/fs.hpp"

namespace bekc {

bool is_kernel_package(const BuildOptions& options);

// The child `bekc build` commands for those modules, each one slot of the
// package's -j `jobs`: the children take further slots from the jobserver
// they share (run/jobserver.hpp), whose MAKEFLAGS `makeflags` gives them
// when the package serves it; nullopt leaves theirs as it is (make's). With
// `traces`, each child writes its trace where `traces` says.
std::vector<Command> package_commands(const BuildOptions& options,
                                      const std::vector<PackageModule>& modules,
                                      const fs::path& self, int jobs,
                                      const std::optional<std::string>& makeflags,
                                      const EnvLookup& env, const ChildTraces* traces = nullptr);

// Why a module's build failed when the package itself is at fault: its
// source includes a quoted header that the compiler's output names and that
// is found neither beside the source, nor in `include_dirs`, nor anywhere
// below the package (brainevent 0.3.0's `_tcsr/tile_mm/binary_csrmm_tile.cu`
// includes "bn_tile.cuh", which its wheel does not ship). Empty otherwise.
std::string package_defect(const fs::path& package, const fs::path& source,
                           const std::vector<fs::path>& include_dirs,
                           const std::string& compiler_output);

// Runs the whole package build; returns the exit code.
int run_package_build(const BuildOptions& options, BuildContext& context);

}  // namespace bekc
