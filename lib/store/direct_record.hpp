// Internal to store/: the direct-mode record file, one JSON document per
// direct key holding up to kMaxDirectRecords records, newest first.
//
//   {"format": 2, "records": [{"key": "…", "written_ns": …,
//     "files": [{"path": "…", "size": …, "mtime_ns": …, "ctime_ns": …,
//                "xxh128": "…"}, …],
//     "absent": ["/inc/first/sub/x.h", …],
//     "absent_dirs": [{"path": "/inc/first", "dev": …, "ino": …,
//                      "mtime_ns": …, "ctime_ns": …,
//                      "names": ["x.h", "bits/y.h", …]}, …]}, …]}
//
// Absent paths are either listed whole ("absent") or grouped under their
// nearest existing directory, with its stamp ("absent_dirs", store/direct.hpp;
// format 2; a file of format 1 has none). Names: is_name_below. A path is
// bytes: one that is not UTF-8 is written and read with util/json_text.hpp's
// escapes.
//
// The file is replaced whole by rename. Two builds adding records at the same
// moment can lose one of the two; that costs a later direct miss, never a
// wrong answer, so no lock is taken.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "store/cache_dir.hpp"
#include "store/file_ops.hpp"
#include "util/error.hpp"

namespace bekc {

struct RecordedFile {
    std::string path;
    FileStat stat;
    std::string xxh128;
};

// Absent paths under one directory that exists: `dir`/each of `names`.
struct AbsentDir {
    std::string dir;
    DirStamp stamp;
    std::vector<std::string> names;
};

struct DirectRecord {
    std::string key;
    int64_t written_ns = 0;  // taken before any of `files` was examined
    std::vector<RecordedFile> files;
    std::vector<std::string> absent;  // checked one by one
    std::vector<AbsentDir> absent_dirs = {};
};

// Whether `name` is a path below a directory: not empty, no NUL, and no
// empty, "." or ".." component (so no leading, trailing or doubled '/'). What
// a record may hold in AbsentDir::names.
bool is_name_below(std::string_view name);

// Empty when the file is missing or unreadable: a broken record file is only
// a miss, and the next record_direct replaces it.
std::vector<DirectRecord> read_direct_records(const CacheDir& cache, const fs::path& file);
// The records of a record file's text; empty when it is not one (not JSON,
// another format, a member missing or of another type, a number that is not
// an integer in range), or when any record holds what the lookup cannot use:
// a key that is not a cache key (store/layout.hpp, is_valid_key), a hash
// that is not 32 hex digits, a path that is neither absolute nor under the
// base directory, or a NUL in a path. Such a file is a miss, and `cache
// verify` removes it.
std::vector<DirectRecord> parse_direct_records(std::string_view text);
std::expected<void, Error> write_direct_records(const CacheDir& cache, const fs::path& file,
                                                const std::vector<DirectRecord>& records);

}  // namespace bekc
