// The kernel-facing headers (brainevent/common.h, bekc/handler.h, ...) travel
// inside the binary; builds need them on disk. They are written once per
// content hash under the cache root, atomically, and shared by every build.
#pragma once

#include <string>

#include "util/fs.hpp"

namespace bekc {

// SHA-256 over every embedded runtime header's path and bytes; part of every key.
const std::string& runtime_headers_hash();

// <cache_root>/runtime/<hash>/include, created if missing.
fs::path materialize_runtime_headers(const fs::path& cache_root);

// Where they would be, without creating anything (for --dry-run).
fs::path runtime_include_dir(const fs::path& cache_root);

}  // namespace bekc
