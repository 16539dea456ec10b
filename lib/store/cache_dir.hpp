// The cache directory's file operations, none of which follows a symbolic
// link below the root. The cache may be shared by several users (or
// machines, over NFS): one of them planting a link at locks/ab/x.lock,
// entries/…/last-use or tmp/ must not make another's bekc read, write,
// truncate or delete anything outside the cache. So every operation takes a
// path relative to the root, walks it one component at a time with
// openat(O_NOFOLLOW | O_DIRECTORY), and acts on the last component relative
// to its parent's descriptor, again without following it; files are used
// only when they are regular. The root itself is the user's choice and is
// followed like any path they name.
//
// Errors are strings that name the full path and the errno's text, so that a
// read-only or permission-denied cache is reported as what it is.
//
// A cache opened with CacheAccess::ReadOnly (a read-only layer:
// store/cache_layers.hpp) is never changed: every operation that would write,
// create, rename, remove or touch fails (touch does nothing) before it asks
// the kernel, whatever the permissions would allow.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/file_ops.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace fs = std::filesystem;

enum class CacheAccess { ReadWrite, ReadOnly };

class CacheDir {
  public:
    explicit CacheDir(fs::path root, CacheAccess access = CacheAccess::ReadWrite)
        : root_(std::move(root)), access_(access) {}

    const fs::path& root() const { return root_; }
    bool read_only() const { return access_ == CacheAccess::ReadOnly; }
    fs::path path(const fs::path& rel) const { return rel.empty() ? root_ : root_ / rel; }

    // The directory `rel` (empty: the root), opened without following links;
    // with `create`, missing components are made (mode 0777 less the umask).
    std::expected<UniqueFd, Error> open_dir(const fs::path& rel, bool create = false) const;

    // lstat-like: a link is reported as what it is (is_regular false,
    // is_symlink true). nullopt when missing or unreachable.
    struct Stat {
        FileStat file;
        bool is_dir = false, is_symlink = false;
        uint64_t dev = 0, ino = 0;
    };
    std::optional<Stat> stat(const fs::path& rel) const;

    std::expected<std::string, Error> read(const fs::path& rel,
                                           uint64_t max_bytes = kDefaultReadLimit) const;
    // Opens a regular file for reading (for hashing).
    std::expected<UniqueFd, Error> open_read(const fs::path& rel) const;
    // Atomic replace (util/fs.hpp), parent directories created.
    std::expected<void, Error> write(const fs::path& rel, std::string_view content) const;
    // Opens (creating when missing) a regular file for reading and writing,
    // for lock files.
    std::expected<UniqueFd, Error> open_rw(const fs::path& rel) const;
    // Appends `content` in one write (O_APPEND: concurrent appends never
    // interleave within a write), creating the file when missing; returns
    // the file's size after it.
    std::expected<uint64_t, Error> append(const fs::path& rel, std::string_view content) const;
    // Sets mtime to now, creating an empty file when missing. Best effort: a
    // read-only cache still serves hits. A link is left alone.
    // `create` false: a missing file stays missing.
    void touch(const fs::path& rel, bool create = true) const;

    // rename(2) within the cache; parents of `to` are created.
    std::expected<void, Error> rename(const fs::path& from, const fs::path& to) const;
    // A directory made fresh (EEXIST is an error), parents created.
    std::expected<void, Error> make_dir(const fs::path& rel) const;
    // Unlinks a file or link (never its target).
    std::expected<void, Error> remove_file(const fs::path& rel) const;
    // Removes a file, link or whole directory tree; links inside are removed,
    // never followed. Missing is success.
    std::expected<void, Error> remove_tree(const fs::path& rel) const;

    struct Item {
        std::string name;
        bool is_dir = false, is_regular = false, is_symlink = false;
    };
    // The names in directory `rel` (nothing when missing); the error is set
    // only when it exists and cannot be read.
    std::expected<std::vector<Item>, Error> list(const fs::path& rel) const;

    // The error every write to `rel` gets in a read-only cache; nothing in
    // another. For writes through a descriptor of open_dir().
    std::expected<void, Error> writable(const fs::path& rel) const;

    // Bytes of every regular file under `rel`, links not followed.
    uint64_t tree_bytes(const fs::path& rel) const;

  private:
    // The parent directory's descriptor and the last component's name.
    std::expected<std::pair<UniqueFd, std::string>, Error> parent_of(const fs::path& rel,
                                                                     bool create) const;

    // The root's descriptor, opened once and shared by copies.
    std::expected<int, Error> root_fd(bool create) const;

    fs::path root_;
    CacheAccess access_;
    mutable std::shared_ptr<UniqueFd> root_fd_;
};

}  // namespace bekc
