// nvcc runs its host-compiler steps through a shell and loses -I paths that
// hold a quote or other shell syntax (bekc never uses a shell, nvcc does). Such
// a directory reaches the compilers through a symlink with a plain name.
#pragma once

#include "util/fs.hpp"

namespace bekc {

bool needs_safe_path(const fs::path& dir);

// `dir` itself when it is plain; else /tmp/bekc-<uid>/paths/<hash> -> dir,
// created (atomically) when missing or pointing elsewhere.
fs::path safe_path_for_nvcc(const fs::path& dir);

}  // namespace bekc
