// One cache entry and how its integrity is checked.
//
// Every file of an entry is sealed at publish (store/seal.hpp): stamp.json
// holds the size and SHA-256 of the manifests, dependencies.json and the
// library. A hit reads the small files and compares their SHA-256 (they are
// read anyway), and checks the library, cheapest first:
//   1. size, mtime and ctime against the stamp (one stat): equal -> trusted.
//      Truncation changes the size; any write changes mtime and ctime, and
//      ctime cannot be set back by utimensat or touch.
//   2. otherwise XXH3-128 of the content against the stamp: equal -> the
//      bytes are unchanged (the entry was copied, touched or hard-linked),
//      and the stamp is refreshed so the next hit is cheap again;
//   3. otherwise SHA-256 against the seal: different -> corrupt.
// `verify` hashes every file with SHA-256. The manifest's library_sha256 must
// also equal the library's sealed SHA-256 (the loader checks it at load).
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

#include "store/cache_dir.hpp"
#include "store/seal.hpp"
#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

struct Entry {
    std::string key;
    fs::path dir;      // absolute
    std::string name;  // the manifest's "name"
    fs::path library;  // dir / the manifest's "library"
    size_t targets = 0;
    // The manifests' library_sha256, which the seal holds for the library.
    std::string library_sha256 = {};

    // manifest.json, or with cuda_graph=false manifest.no-cuda-graph.json.
    fs::path manifest(bool cuda_graph = true) const;
};

// Validates the entry at `dir` (relative to the cache root) for `key`: the
// seal holds at `level`, both manifests parse, are schema 1, carry this key,
// name the same library inside the directory and its SHA-256. The error says
// what is wrong, in a phrase that fits "cache entry <key> is corrupt: …".
std::expected<Entry, Error> check_entry(const CacheDir& cache, const fs::path& dir,
                                        std::string_view key, CheckLevel level);

// For publishing: checks a staged entry in full and seals it. The error says
// what the builder left out or got wrong.
std::expected<Entry, Error> seal_entry(const CacheDir& cache, const fs::path& staging,
                                       std::string_view key);

}  // namespace bekc
