// The one layer bekc reads and writes files through. Two rules hold for every
// caller:
//  - reads take regular files only, opened without blocking, and never more
//    than a stated number of bytes: a FIFO, /dev/zero or a 4 GB file named
//    where a header or a record was expected is an error, not a hang or a
//    flood;
//  - writes that others may read concurrently appear whole or not at all: a
//    fresh temporary beside the target (O_EXCL, so never through a planted
//    link), every write and the close checked, then rename(2).
// The *_at forms work relative to a directory descriptor, so the cache
// (store/cache_dir.hpp) can reach its files without following links.
#pragma once

#include <chrono>

#include <sys/stat.h>

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

// An owned file descriptor, closed on destruction.
class UniqueFd {
  public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept;
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    int release();
    void reset(int fd = -1);

  private:
    int fd_ = -1;
};

// Inputs, headers and manifests are far below this; a larger file is a
// mistake (or an attack), reported rather than read.
inline constexpr uint64_t kDefaultReadLimit = uint64_t{1} << 30;

struct ReadOptions {
    uint64_t max_bytes = kDefaultReadLimit;
    // false: a symbolic link as the last component is refused (ELOOP).
    bool follow_symlinks = true;
};

// Opens `name` (relative to `dirfd`, or absolute with AT_FDCWD) for reading
// when it is a regular file. `shown` is the path the error message names.
std::expected<UniqueFd, Error> open_regular_at(int dirfd, const fs::path& name,
                                               const fs::path& shown, ReadOptions options);

// An open regular file and what fstat(2) said of it once it was open.
struct RegularFile {
    UniqueFd fd;
    struct stat st;
};

// open_regular_at, with the stat it checked: callers that need the size or
// the timestamps need not ask again.
std::expected<RegularFile, Error> open_regular_file_at(int dirfd, const fs::path& name,
                                                       const fs::path& shown, ReadOptions options);

// Reads an open descriptor whole when it is a regular file within the limit.
std::expected<std::string, Error> read_fd(UniqueFd fd, const fs::path& shown, ReadOptions options);

std::expected<std::string, Error> read_file_at(int dirfd, const fs::path& name,
                                               const fs::path& shown, ReadOptions options = {});

// Reads a whole regular file; the error names the file and the cause.
std::expected<std::string, Error> read_file(const fs::path& path, ReadOptions options = {});

// Writes `content` to `name` in `dirfd` (mode 0666 less the umask) through a
// temporary beside it and rename(2). The error names `shown` and the errno.
std::expected<void, Error> write_atomic_at(int dirfd, const std::string& name,
                                           std::string_view content, const fs::path& shown);

std::expected<void, Error> write_atomic(const fs::path& path, std::string_view content);

// Whether nvcc, which runs its host-compiler steps through a shell, can take
// `path` as it is: no quote, white space or other shell syntax.
bool shell_safe_path(const fs::path& path);

// Where a build may put its private directories after /tmp/bekc-<uid>, in
// order: $XDG_RUNTIME_DIR/bekc and $TMPDIR/bekc-<uid> as the build's
// environment gives them (absolute paths only), then a directory of the
// cache's (<cache>/tmp/builds.<uid>, store/layout.hpp). A build derives them
// from its context and cache (prep/build_context.hpp) and passes them to
// whatever makes a private directory; this layer reads no environment itself.
struct PrivateDirPlaces {
    std::optional<std::string> xdg_runtime_dir, tmpdir;
    fs::path fallback;
    bool operator==(const PrivateDirPlaces&) const = default;
};
// A directory only this user can reach (a real directory, owned by this
// user, mode 0700, made so when it is not), so nobody else can plant links or
// files in it: the first of /tmp/bekc-<uid> and `places` that is one, or can
// be made one, in a parent nobody else can rename it out of. Another user who
// created /tmp/bekc-<uid> first only moves this user to the next. Paths that
// nvcc cannot take (shell_safe_path) are passed over.
std::expected<fs::path, Error> private_user_dir(const PrivateDirPlaces& places);
// The path private_user_dir() would choose first, without creating or
// checking anything (for --dry-run).
fs::path private_user_path();
// A new, empty directory private_user_dir(places)/<prefix>.XXXXXX, unique to this
// build: no other process, not even a compiler left running by a killed bekc,
// writes into it. The caller removes it.
// First it removes the directories of that kind ("build.*" for "build.<hash>")
// that a bekc killed outright left there, once a day old: no build lasts that
// long, and nothing else writes there.
std::expected<fs::path, Error> private_temp_dir(const PrivateDirPlaces& places,
                                                const std::string& prefix);
inline constexpr std::chrono::seconds kStalePrivateDirAge{24 * 3600};
// The sweep itself, for the tests.
void remove_stale_private_dirs(const fs::path& dir, const std::string& prefix,
                               std::chrono::seconds max_age);

// "host.pid.random": unique across processes and machines sharing a directory.
std::string unique_suffix();

// The absolute path with symbolic links resolved as far as it exists, for
// keys that must not depend on how a directory was spelled; the plain
// absolute, normalised path when that fails.
fs::path resolved_path(const fs::path& path);

// `path` is `dir` or below it, lexically (nothing is read): "/a/b/c.h" is
// under "/a/b" and "/a/b/", not under "/a/bc"; "/a/./b/c.h" is under "/a/b",
// "/a/b/../c.h" is not. Plain absolute paths compare as strings, since keys
// ask it some twenty times per header; the normalised paths decide the rest.
bool path_is_under(const fs::path& path, const fs::path& dir);

// What is at a path, as the compilers' and linker's searches see it (a
// stat, following links as they do; nothing is opened).
enum class Presence { Absent, File, Other };
Presence presence(const fs::path& path);

// Real paths, as fs::weakly_canonical gives them (links resolved as far as
// the path exists, the rest normalised), memoised per directory: the
// hundreds of headers of one build share a few dozen directories, so
// resolving all of them costs one lstat per distinct directory and one per
// file, not a stat and a readlink per component of every path. For one
// pass over paths that do not change meanwhile.
class RealPaths {
  public:
    // Empty when the path cannot be examined (as weakly_canonical's error).
    fs::path resolve(const fs::path& path);

  private:
    // `real`: a real directory; the real path of `real`/`name`, or nullopt
    // when nothing is there (or it cannot be examined).
    std::optional<std::string> child(const std::string& real, std::string_view name, int depth);
    // How much of `path` exists: the real path of its longest existing
    // prefix, and where the rest begins in `path` (npos: all of it exists).
    // A relative `path` starts at the real directory `cur`.
    std::pair<std::string, size_t> walk(std::string cur, std::string_view path, int depth);

    std::unordered_map<std::string, std::optional<std::string>> memo_;  // real dir + name
    std::unordered_map<std::string, std::optional<std::string>> dirs_;  // as spelt
    bool failed_ = false;  // a component could not be examined
};

// `path` made absolute and normal, with each ".." resolved as the kernel
// resolves it: it leaves the directory the components before it lead to.
// Lexically, "proj/src/../common/x.h" is "proj/common/x.h"; where proj/src
// is a link to ../real/src, the kernel (and so a compiler) opens
// "real/common/x.h". Links that no ".." follows keep their spelling, so the
// path still shows the way the file was reached. Without "..", nothing is
// read, and the path is lexically_normal's (a trailing '/' kept).
fs::path physical_normal(const fs::path& path);

// physical_normal with the directories that ".." leaves looked at once per
// spelling (/usr/local/cuda/bin/../targets/...: every header of the
// toolkit). For one pass over paths that do not change meanwhile.
class PhysicalPaths {
  public:
    fs::path normal(const fs::path& path);

  private:
    // Where "<dir>/.." leads, `dir` being absolute and normal ("" for "/").
    const std::string& up(const std::string& dir);

    std::unordered_map<std::string, std::string> up_;
};

// "cannot <what> <path>: <strerror(err)>", the message shape of this layer.
std::string errno_message(std::string_view what, const fs::path& path, int err);

// What a path that is not a regular file is, for messages: "a directory",
// "a FIFO", "a device", "a socket".
std::string kind_of(fs::file_type type);

// A file the user names for bekc to write (--depfile): refused, with why,
// when it exists (through links, as the user named it) and is not a regular
// file. Replacing /dev/null or a FIFO by rename, as root, would replace the
// machine's device.
std::expected<void, Error> check_writable_regular(const fs::path& path);

}  // namespace bekc
