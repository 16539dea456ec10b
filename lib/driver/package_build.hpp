// `bekc build <package dir>`: every kernel file of an installed Python
// package (brainevent's, say) into the cache in one command, each under the
// module name the package itself loads it with, so the package's first use of
// each op is a cache hit instead of a compile.
//
// A package directory is one with `include/brainevent/common.h` and no kernel
// source directly in it. Each kernel file below it becomes its own build:
// `bekc build FILE --name=NAME -I <package>/include --xla-include=<jaxlib>`,
// the same command (and so the same cache key) that bekc's Python loaders
// give for the package's `load_cuda_file(FILE, name=NAME)`. The names come from
// the package's own Python source (scan/python_loads.hpp); a file that the
// package loads only under a computed name or with extra flags is still
// compiled, under its file name, so it is checked, but its first use builds.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "driver/build_options.hpp"
#include "run/command.hpp"
#include "util/fs.hpp"

namespace bekc {

bool is_kernel_package(const BuildOptions& options);

struct PackageModule {
    fs::path source;        // canonical path of the kernel file
    std::string name;       // the module name it is built under
    std::string load_site;  // "_csr/binary.py:610" when the package loads it by that name
};

// The modules to build, sorted by source path then name, each once.
std::vector<PackageModule> plan_package(const fs::path& package);

// The -j slots each module's build gets within `jobs`: one each, or more
// where the package leaves them. With every module timed before (`seconds`),
// a module gets as many as its share of the work asks (its time over the
// total per slot), so the longest is not the last to finish; otherwise the
// slots are shared evenly.
std::vector<int> module_slots(size_t modules, int jobs,
                              const std::function<std::optional<double>(size_t)>& seconds);

// The child `bekc build` commands for those modules, `slots[i]` the -j of
// the i-th (and the slots its command takes).
std::vector<Command> package_commands(const BuildOptions& options,
                                      const std::vector<PackageModule>& modules,
                                      const fs::path& self, const std::vector<int>& slots);

// Runs the whole package build; returns the exit code.
int run_package_build(const BuildOptions& options);

}  // namespace bekc
