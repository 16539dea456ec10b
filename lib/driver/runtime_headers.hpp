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

// The handler support code (bekc/handler_rt.cpp) compiled by one host
// compiler: <cache_root>/runtime/<hash>/obj/<compiler key>/bekc_rt.o. Every
// library links it, so wrappers only declare those functions.
struct RuntimeObjectRequest {
    fs::path cache_root;
    fs::path include;          // materialize_runtime_headers(cache_root)
    std::string cxx;           // the host compiler, as found
    std::string cxx_identity;  // Tool::identity(): a new compiler gets a new object
    std::string cxx_std;       // -std=...: the object follows the library's standard
    // The host compiler's environment that can change the object
    // ("CPATH=...\n"...: driver/compiler_env.hpp), so it gets its own object.
    std::string cxx_env;
};

// Where the object is, or will be.
fs::path runtime_object_path(const RuntimeObjectRequest& r);

// Compiles the object when it is missing (once, under a lock; published by
// rename) and returns its path. The command is printed to stderr with
// `verbose`. A compiler failure throws FatalError with its output.
fs::path ensure_runtime_object(const RuntimeObjectRequest& r, bool verbose);

}  // namespace bekc
