// File facts the cache and direct mode compare: what a stat says, and the
// clock file timestamps use. Reading and writing go through util/fs.hpp (any
// path) and store/cache_dir.hpp (inside the cache, no links followed).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "util/fs.hpp"

namespace bekc {

namespace fs = std::filesystem;

// What a stat says about a file, with nanosecond timestamps.
struct FileStat {
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    bool is_regular = false;

    bool operator==(const FileStat&) const = default;
};

// What an lstat says about a directory: which one it is and when its entries
// last changed (an entry added, removed or renamed moves mtime and ctime).
struct DirStamp {
    uint64_t dev = 0;
    uint64_t ino = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;

    bool operator==(const DirStamp&) const = default;
};

// The stamp of `path` by lstat; nullopt when it is not a directory (a link
// to one included) or cannot be lstat'ed.
std::optional<DirStamp> dir_stamp(const char* path);
// What an lstat result says, as a DirStamp; nullopt when it is no directory.
std::optional<DirStamp> dir_stamp_of(const struct stat& st);

// For the user's files (headers, inputs): follows symlinks, as the compilers
// do; nullopt when the path does not exist or cannot be stat'ed.
std::optional<FileStat> stat_file(const fs::path& path);

// What a stat(2) result says, as a FileStat.
FileStat file_stat_of(const struct stat& st);

// Wall-clock time, nanoseconds since the epoch: the clock file timestamps use.
int64_t now_ns();

}  // namespace bekc
