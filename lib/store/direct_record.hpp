// Internal to store/: the direct-mode record file, direct/ab/cdef….rec (and
// portable/ab/cdef….rec), holding up to kMaxDirectRecords records, newest
// first. A binary format, little-endian, written and read by one
// description of its fields (direct_record.cpp, `record_fields`):
//
//   "bekc-rec"            8 bytes, the magic
//   u32 format            kRecordFormat (3; formats 1 and 2 were JSON files
//                         named ….json, which this bekc never reads)
//   u32 count             then `count` records, each:
//     str key               a cache key (store/layout.hpp, is_valid_key)
//     i64 written_ns
//     u32 n, n files:       str path, u64 size, i64 mtime_ns, i64 ctime_ns,
//                           u8 is_regular (0 or 1), str xxh128 (32 hex digits)
//     u32 n, n absent paths: str path
//     u32 n, n AbsentDirs:  str path, u64 dev, u64 ino, i64 mtime_ns,
//                           i64 ctime_ns, u32 m, m names: str name
//   u64 check             XXH3-64 of every byte before it
//
// where `str` is a u32 byte count and the bytes, as they are (a path need not
// be UTF-8). A path is absolute or under the base directory
// ("$BEKC_BASE_DIR/...", store/base_dir.hpp) and holds no NUL; a name is
// is_name_below's. Absent paths are either listed whole ("absent") or grouped
// under their nearest existing directory, with its stamp (store/direct.hpp).
//
// The file is replaced whole by rename. Two builds adding records at the same
// moment can lose one of the two; that costs a later direct miss, never a
// wrong answer, so no lock is taken.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
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

    bool operator==(const RecordedFile&) const = default;
};

// Absent paths under one directory that exists: `dir`/each of `names`.
struct AbsentDir {
    std::string dir;
    DirStamp stamp;
    std::vector<std::string> names;

    bool operator==(const AbsentDir&) const = default;
};

struct DirectRecord {
    std::string key;
    int64_t written_ns = 0;  // taken before any of `files` was examined
    std::vector<RecordedFile> files;
    std::vector<std::string> absent;  // checked one by one
    std::vector<AbsentDir> absent_dirs = {};

    bool operator==(const DirectRecord&) const = default;
};

// Whether `name` is a path below a directory: not empty, no NUL, and no
// empty, "." or ".." component (so no leading, trailing or doubled '/'). What
// a record may hold in AbsentDir::names.
bool is_name_below(std::string_view name);

// The bytes of a record file holding `records`.
std::string encode_direct_records(const std::vector<DirectRecord>& records);
// The records of a record file's bytes; nullopt when they are not one of this
// format: another magic or format, a count or length past the end, bytes
// after the last record, a check that does not match, or a record holding
// what the lookup cannot use (a key that is not a cache key, a hash that is
// not 32 hex digits, a path that is neither absolute nor under the base
// directory or holds a NUL, a name that is not below its directory). Such a
// file is a miss, and `cache verify` removes it.
std::optional<std::vector<DirectRecord>> decode_direct_records(std::string_view bytes);

// Empty when the file is missing, unreadable or not a record file: a broken
// record file is only a miss, and the next record_direct replaces it.
std::vector<DirectRecord> read_direct_records(const CacheDir& cache, const fs::path& file);
std::expected<void, Error> write_direct_records(const CacheDir& cache, const fs::path& file,
                                                const std::vector<DirectRecord>& records);

}  // namespace bekc
