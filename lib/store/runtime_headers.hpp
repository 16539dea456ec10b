// The kernel-facing headers (brainevent/common.h, bekc/handler.h, ...) travel
// inside the binary; builds need them on disk. They are written once per
// content hash under the cache root, atomically, and shared by every build.
// So is the handler support code compiled by each host compiler, bekc_rt.o.
// The build graph says when either is missing (plan/build_graph.hpp); these
// functions name them and publish them.
#pragma once

#include <expected>
#include <string>

#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

// SHA-256 over every embedded runtime header's path and bytes; part of every key.
const std::string& runtime_headers_hash();

// <cache_root>/runtime/<hash>/include, created if missing or damaged; a
// Cache error when the cache cannot take it.
std::expected<fs::path, Error> materialize_runtime_headers(const fs::path& cache_root);

// Where they are, or would be, without creating anything.
fs::path runtime_include_dir(const fs::path& cache_root);

// Whether the headers are in the cache, whole (their seal holds).
bool runtime_headers_ready(const fs::path& cache_root);

// Which bekc_rt.o a build links, as plain values (prep/build_inputs.hpp,
// runtime_object_id, fills them from a build).
struct RuntimeObjectId {
    fs::path cache_root;
    std::string compiler;  // the host compiler's Tool::identity()
    std::string cxx_std;
    // "NAME=value\n" for each variable the host compiler reads that can
    // change the object (toolchain/compiler_env.hpp, host_compiler_env).
    std::string compiler_env;
};

// <cache_root>/runtime/<hash>/obj/<compiler key>/bekc_rt.o: one per host
// compiler identity, standard and host-compiler environment. Every library
// links it, so wrappers only declare those functions.
fs::path runtime_object_path(const RuntimeObjectId& id);

// Whether that object is in the cache, whole.
bool runtime_object_ready(const RuntimeObjectId& id);

// Keeps `built` (compiled by the graph's runtime-object step) as the
// cache's object, unless another build kept one first; moves it in.
// A Cache error when the cache cannot take it.
std::expected<void, Error> publish_runtime_object(const RuntimeObjectId& id, const fs::path& built);

}  // namespace bekc
