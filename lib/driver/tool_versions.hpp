// Compiler versions for cache keys and manifests without running a compiler
// on a hit: `TOOL --version` is asked once per binary identity (path, size,
// mtime) and remembered in <cache>/tools.json.
#pragma once

#include <string>

#include "plan/toolchain.hpp"

namespace bekc {

std::string remembered_tool_version(const Tool& tool, const fs::path& cache_root);

}  // namespace bekc
