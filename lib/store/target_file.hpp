// target.json in a cache entry (store/layout.hpp): where its library runs
// (plan/target.hpp), written when the entry is published and read by a hit
// that checks the machine in place of the toolchain (portable/portable.hpp).
// Sealed with the entry's other files (store/seal.hpp).
#pragma once

#include <expected>
#include <string>

#include "plan/target.hpp"
#include "store/cache_dir.hpp"
#include "util/error.hpp"

namespace bekc {

std::string render_target(const LibraryTarget& target);

// The target.json of the entry directory `entry` (relative to the cache
// root); an Error when it is missing (an entry of an older bekc) or not
// what render_target writes.
std::expected<LibraryTarget, Error> read_target(const CacheDir& cache, const fs::path& entry);

// Pure: the parse behind read_target.
std::expected<LibraryTarget, Error> parse_target(std::string_view text);

}  // namespace bekc
