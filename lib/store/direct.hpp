// Direct mode, after ccache's: answering "which cache key would these inputs
// produce?" without running the compiler to list the headers.
//
// The caller computes a direct key from what it knows before compiling (the
// input bytes, flags, toolchain identity). After a build it records, under
// that direct key, the full key plus every file the compile read. A later
// lookup rechecks those files and returns the full key when all match.
//
// Rechecking a file is a stat first: same size, mtime and ctime as recorded
// means unchanged, and only otherwise is the content hashed (XXH3-128). Two
// cases defeat the stat, and both force a content hash:
//  - the "racy" file: on filesystems that keep timestamps in whole seconds,
//    a file rewritten in the same second as the record was made keeps its
//    mtime. A file whose mtime or ctime is within `racy_window` (default 2 s:
//    one second of granularity plus clock skew) of the record's time is
//    therefore always hashed. The record's time is taken before its files
//    are examined, and clocks are assumed synchronised (as make assumes).
//  - a changed file whose mtime was put back (utimensat): ctime still moved,
//    and user space cannot set ctime.
// A header can also change by appearing: `#include "x.h"` found in the third
// -I directory is shadowed if x.h later appears in the first. The caller
// lists such paths (see shadowing_paths) and the record fails if any exists.
//
// Most absent paths lie in a few directories that exist (a system include
// directory searched before the one holding the header). The record groups
// each path under its nearest existing directory D with D's stamp (lstat:
// device, inode, mtime, ctime), taken before D's entry on the way to the path
// was found absent. A path can appear only through a new entry of D, which
// moves D's mtime and ctime; so while D's stamp is unchanged, and its times
// lie outside the racy window of the record's time (the same rule as files),
// its paths are still absent without an lstat each. Otherwise each is checked
// through D's entry on the way to it, then by its own lstat, and where all
// are absent the lookup stamps D again for the next. A path with no such
// directory, or whose entry exists at record time, is listed whole.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "store/base_dir.hpp"
#include "store/cache_dir.hpp"
#include "store/file_ops.hpp"
#include "util/error.hpp"

namespace bekc {

// Records kept per direct key (one per distinct set of header contents).
inline constexpr size_t kMaxDirectRecords = 8;

struct DirectDependency {
    fs::path path;  // absolute, so the record holds from any working directory
    // SHA-256 of the bytes that went into the full key. When given, recording
    // fails if the file no longer has them, so a header edited during the
    // build cannot be recorded under the old key. Empty: not checked.
    std::string sha256;
    // When the caller read the file for the key already: the stat taken
    // before that read and the XXH3-128 of the same bytes as `sha256`. They
    // are recorded as they are, without reading the file again; a later
    // change shows at the lookup, as a stat that differs.
    std::optional<FileStat> stat = std::nullopt;
    std::string xxh128 = {};
};

struct DirectInputs {
    std::string key;  // the full cache key this build produced
    std::vector<DirectDependency> dependencies;
    std::vector<fs::path> must_not_exist;
    // With dependencies that carry their stat: a time before the first of
    // those stats was taken, which the record's time must not be after (see
    // "racy" above). 0: none carries one.
    int64_t examined_ns = 0;
};

struct DirectLookup {
    std::optional<std::string> key;  // set on a hit
    std::string why_not;             // on a miss, for -v: "no record", "/inc/a.h changed", ...
    size_t rehashed = 0;             // files whose content had to be hashed
    size_t absent_checked = 0;       // absent paths checked one by one, not by their directory
};

// Pure: whether `now` proves the file unchanged since it was recorded with
// `recorded` in a record made at `record_ns`, or its content must be hashed.
bool must_rehash(const FileStat& recorded, const FileStat& now, int64_t record_ns,
                 std::chrono::nanoseconds racy_window);

// Pure: whether a directory stamped `recorded` in a record made at
// `record_ns` and stamped `now` still has the entries it had then: the same
// stamp, its times outside the racy window before the record.
bool stamp_holds(const DirStamp& recorded, const DirStamp& now, int64_t record_ns,
                 std::chrono::nanoseconds racy_window);

// Whether the file system of `dir` keeps a directory's mtime and ctime
// itself, on every entry added, removed or renamed, so that a stamp can answer
// for its entries: the local ones (ext4, xfs, btrfs, tmpfs, overlayfs, zfs,
// f2fs). Not network file systems (their attributes are cached), FUSE (a
// daemon's times) or read-only images (whose times are often fixed). Paths
// under any other are listed whole.
bool keeps_dir_times(const std::string& dir);

// Pure: the paths where a new file would be found before `dependency`,
// which was found under the first of the ordered `search_dirs` that holds it,
// by its path R relative to that directory: R under each of `quoted_dirs`
// (the directories a quoted include searches first: the including files'),
// then R under every earlier search directory; `dependency` itself is never
// listed. Empty when it is under none of `search_dirs`, or when nothing comes
// before it. Paths are compared lexically, normalised; nothing is read.
std::vector<fs::path> shadowing_paths(const std::vector<fs::path>& search_dirs,
                                      const fs::path& dependency,
                                      const std::vector<fs::path>& quoted_dirs = {});

// The record file operations behind Cache::lookup_direct / record_direct;
// `file` is relative to the cache root.
// Paths under `base` are recorded relative to it (store/base_dir.hpp) and
// checked under the base in force.
// `accept`, when given, is asked about each record whose files hold, newest
// first: the first it accepts is the answer (a portable record's entry must
// also fit the machine: portable/portable.hpp).
using AcceptKey = std::function<bool(const std::string& key)>;
DirectLookup check_direct_file(const CacheDir& cache, const fs::path& file,
                               std::chrono::nanoseconds racy_window, const BaseDir& base = {},
                               const AcceptKey& accept = {});
std::expected<void, Error> add_direct_record(const CacheDir& cache, const fs::path& file,
                                             const DirectInputs& inputs, const BaseDir& base = {});
// For `cache verify`: the file parses as a record file.
bool direct_file_is_valid(const CacheDir& cache, const fs::path& file);

}  // namespace bekc
