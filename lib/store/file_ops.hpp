// The few filesystem operations the cache is built from, with the property
// each one gives. Everything that must appear atomically to other processes
// is written beside its final name and renamed into place: rename(2) within
// one directory is atomic on local filesystems and on NFS (the server does
// it in one operation), so readers see the old file or the new one, never a
// mix.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

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

// Follows symlinks; nullopt when the path does not exist or cannot be stat'ed.
std::optional<FileStat> stat_file(const fs::path& path);

std::expected<std::string, std::string> read_text(const fs::path& path);

// Writes a sibling temporary file and renames it over `path`.
std::expected<void, std::string> write_atomic(const fs::path& path, std::string_view content);

// Sets the file's mtime to now, creating it when missing; failures are
// ignored because a read-only shared cache must still serve hits.
void touch(const fs::path& path);

// "host.pid.random": unique across processes and machines sharing the cache.
std::string unique_suffix();

// Sum of the sizes of the regular files under `dir` (0 when missing).
uint64_t tree_size(const fs::path& dir);

// Wall-clock time, nanoseconds since the epoch: the clock file timestamps use.
int64_t now_ns();

}  // namespace bekc
