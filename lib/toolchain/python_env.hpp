// Where a user's Python environments keep their packages, found without
// running Python: bekc looks there for jaxlib's FFI headers
// (toolchain/xla_headers) and for a CUDA toolkit installed from pip
// (toolchain/nvcc_search).
#pragma once

#include <string>
#include <vector>

#include "util/env.hpp"
#include "util/fs.hpp"

namespace bekc {

// The prefixes of the Python environments in play, in order: the active
// virtualenv ($VIRTUAL_ENV), the active conda environment ($CONDA_PREFIX),
// the prefix of every python3 on $PATH (a venv's bin/python3 is a link into
// /usr/bin, so its own directory counts, not the link's target), /usr/local,
// /usr, and the user's ~/.local. Duplicates are dropped.
std::vector<fs::path> python_prefixes(const EnvLookup& env);

// <prefix>/lib/python3.*/{site,dist}-packages that exist, newest Python first.
std::vector<fs::path> site_packages_dirs(const fs::path& prefix);

}  // namespace bekc
