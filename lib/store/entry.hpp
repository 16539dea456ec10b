// One cache entry and how its integrity is checked.
//
// The manifest's library_sha256 is the authority, but hashing a library of
// tens of megabytes with SHA-256 on every hit would cost more than the rest of
// a hit together. So publish also writes stamp.json: the library's size,
// mtime, ctime and XXH3-128. A hit checks, cheapest first:
//   1. size, mtime and ctime against the stamp (one stat): equal -> trusted.
//      Truncation changes the size; any write changes mtime and ctime, and
//      ctime cannot be set back by utimensat or touch.
//   2. otherwise XXH3-128 of the content against the stamp: equal -> the
//      bytes are unchanged (the entry was copied, touched or hard-linked),
//      and the stamp is refreshed so the next hit is cheap again;
//   3. otherwise SHA-256 against library_sha256 -> equal: the stamp was the
//      stale part and is rewritten; different: the entry is corrupt.
// `verify` always does step 3. What step 1 cannot see (the same bytes
// rewritten with identical size and both timestamps) needs root or a
// filesystem bug, and the Python loader checks the SHA-256 at load anyway.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

namespace bekc {

namespace fs = std::filesystem;

struct Entry {
    std::string key;
    fs::path dir;
    std::string name;  // the manifest's "name"
    fs::path library;  // dir / the manifest's "library"
    size_t targets = 0;

    // manifest.json, or with cuda_graph=false manifest.no-cuda-graph.json.
    fs::path manifest(bool cuda_graph = true) const;
};

enum class CheckLevel {
    Cheap,  // the stamp ladder above
    Full,   // always SHA-256
};

// Validates the entry in `dir` for `key`: both manifests parse, are schema 1,
// carry this key, name the same library inside the directory and the same
// library_sha256, and the library passes the check at `level`. The error
// says what is wrong, in a phrase that fits "cache entry <key> is corrupt: …".
std::expected<Entry, std::string> check_entry(const fs::path& dir, std::string_view key,
                                              CheckLevel level);

// For publishing: fully checks a staged entry and writes its stamp.json and
// last-use file. The error says what the builder left out or got wrong.
std::expected<Entry, std::string> seal_entry(const fs::path& staging, std::string_view key);

}  // namespace bekc
