// The wire format of a remote cache entry: a plain ustar archive (POSIX
// 1003.1-1988, what `tar --format=ustar` writes and `tar -tvf` lists) of the
// entry directory's regular files, flat, no directories.
//
// Written and read here rather than by spawning tar, because what comes back
// from a remote is untrusted: the reader accepts only regular-file members
// with a plain name (no '/', no "." or "..", no links, devices or extended
// headers), no name twice, checks every header's checksum, and fails on an
// archive that ends early. Anything else is a corrupt entry, never a file
// written outside the directory it was asked to fill. Members are bounded too:
// their sizes together may not pass ArchiveLimits::max_bytes, checked from
// each header before anything of that member is written.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

// At most this many members; an entry has four or five.
inline constexpr size_t kMaxArchiveMembers = 16;

// The default limit on an entry archive ($BEKC_REMOTE_MAX_ENTRY_SIZE): 256
// MiB. A kernel library's archive is a few megabytes, and one built for every
// architecture tens of megabytes; the limit is what a broken or hostile
// server can make one build write (and read through), so it stays a small
// multiple of that, not a share of the disk.
inline constexpr uint64_t kDefaultMaxEntryBytes = uint64_t{256} << 20;

struct ArchiveLimits {
    // The members' sizes added up.
    uint64_t max_bytes = kDefaultMaxEntryBytes;
    // Unpacking stops with an error once this passes.
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Writes `archive` holding `names` (plain file names) from `dir`, in the
// order given, with fixed owner, mode and time so the same entry always packs
// to the same bytes. Each must be a regular file (opened without blocking and
// without following a link).
std::expected<void, Error> write_entry_archive(const fs::path& dir,
                                               const std::vector<std::string>& names,
                                               const fs::path& archive);

// Unpacks `archive` into the existing, empty directory `dir` and returns the
// member names. On error `dir` may hold some members; the caller discards it.
std::expected<std::vector<std::string>, Error> read_entry_archive(const fs::path& archive,
                                                                  const fs::path& dir,
                                                                  const ArchiveLimits& limits = {});

// Whether `name` may be a member: a plain, printable file name that fits a
// ustar name field.
bool is_plain_member_name(const std::string& name);

}  // namespace bekc
