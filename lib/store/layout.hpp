// Where things live in the cache directory. See docs/cache.md.
//
//   <root>/
//     CACHEDIR.TAG            marks the tree as a cache for backup tools
//     entries/ab/cdef…/       one published entry per key ("ab" = first two
//                             hex digits of the key, "cdef…" = the rest)
//       lib<name>.so          the library
//       manifest.json         manifest naming the command-buffer symbols
//       manifest.no-cuda-graph.json
//       stamp.json            size, mtime and XXH3-128 of the library,
//                             written at publish: the cheap integrity check
//       last-use              empty; its mtime is the entry's last hit (LRU)
//     direct/ab/cdef….json    direct-mode records for one direct key
//     locks/ab/cdef….lock     flock(2) files, one per key being built
//     tmp/                    staging directories "<key>.<host>.<pid>.<rand>"
//                             and entries on their way out "trash.<…>"
//
// Everything under entries/ appears by rename(2) of a complete directory from
// tmp/, which is on the same filesystem, so readers never see a partial entry.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/env.hpp"

namespace bekc {

namespace fs = std::filesystem;

inline constexpr std::string_view kManifestFile = "manifest.json";
inline constexpr std::string_view kManifestNoGraphFile = "manifest.no-cuda-graph.json";
inline constexpr std::string_view kStampFile = "stamp.json";
inline constexpr std::string_view kLastUseFile = "last-use";
inline constexpr std::string_view kTrashPrefix = "trash.";

// True for what KeyBuilder::digest() produces: 64 lowercase hex digits.
// Keys become path components, so nothing else may get through.
bool is_valid_key(std::string_view key);

class CacheLayout {
  public:
    explicit CacheLayout(fs::path root) : root_(std::move(root)) {}

    const fs::path& root() const { return root_; }
    fs::path entries_dir() const { return root_ / "entries"; }
    fs::path direct_dir() const { return root_ / "direct"; }
    fs::path locks_dir() const { return root_ / "locks"; }
    fs::path tmp_dir() const { return root_ / "tmp"; }

    // These throw FatalError (internal) for an invalid key.
    fs::path entry_dir(std::string_view key) const;
    fs::path lock_file(std::string_view key) const;
    fs::path direct_file(std::string_view direct_key) const;

    // The key an entry directory or lock/record file stands for, or "" when
    // the path does not look like one of ours.
    static std::string key_of(const fs::path& fanned_out);

  private:
    fs::path root_;
};

// `getenv` is util/env.hpp's lookup function; tests pass a stub.
// $BEKC_CACHE_DIR, else $XDG_CACHE_HOME/bekc (when absolute, as the XDG spec
// requires), else $HOME/.cache/bekc. `--cache-dir` overrides all of these
// and is the caller's business. Fails only when HOME is unset too.
std::expected<fs::path, std::string> default_cache_dir(const EnvLookup& getenv);

}  // namespace bekc
