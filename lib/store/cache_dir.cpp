#include "store/cache_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "util/error.hpp"

namespace bekc {

namespace {

// openat2(2) (Linux 5.6) resolves a whole relative path in one call and can
// refuse every link on the way (RESOLVE_NO_SYMLINKS) and any way out
// (RESOLVE_BENEATH). Where it is missing or filtered (ENOSYS, or EPERM from
// a seccomp profile), every call takes the component walk instead.
std::atomic<bool> g_no_openat2{false};

int open_beneath(int dirfd, const std::string& rel, int flags) {
    if (g_no_openat2.load(std::memory_order_relaxed)) return -1;
    struct open_how how {};
    how.flags = static_cast<uint64_t>(flags);
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = ::syscall(__NR_openat2, dirfd, rel.c_str(), &how, sizeof how);
    if (fd < 0 && (errno == ENOSYS || errno == EPERM || errno == E2BIG))
        g_no_openat2.store(true, std::memory_order_relaxed);
    return static_cast<int>(fd);
}

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

CacheDir::Stat to_stat(const struct stat& st) {
    CacheDir::Stat s;
    s.file = file_stat_of(st);
    s.is_dir = S_ISDIR(st.st_mode);
    s.is_symlink = S_ISLNK(st.st_mode);
    s.dev = st.st_dev;
    s.ino = st.st_ino;
    return s;
}

// Relative paths only, and no component that climbs out.
std::vector<std::string> components(const fs::path& rel) {
    std::vector<std::string> out;
    if (rel.is_absolute()) throw InternalError("absolute cache path " + rel.string());
    for (const auto& c : rel) {
        std::string s = c.string();
        if (s.empty() || s == ".") continue;
        if (s == "..") throw InternalError("cache path climbs out: " + rel.string());
        out.push_back(std::move(s));
    }
    return out;
}

// Removes what `name` in `dirfd` is; a directory's content first, each
// subdirectory opened without following links.
std::expected<void, Error> remove_at(int dirfd, const std::string& name, const fs::path& shown) {
    if (::unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return {};
    if (errno != EISDIR && errno != EPERM)
        return fail(ErrorKind::Cache, errno_message("remove", shown, errno));
    UniqueFd sub(::openat(dirfd, name.c_str(), kDirFlags));
    if (!sub.valid()) {
        if (errno == ENOENT) return {};
        return fail(ErrorKind::Cache, errno_message("remove", shown, errno));
    }
    DIR* d = ::fdopendir(::dup(sub.get()));
    if (!d) return fail(ErrorKind::Cache, errno_message("remove", shown, errno));
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    for (const auto& n : names)
        if (auto r = remove_at(sub.get(), n, shown / n); !r) return r;
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
        return fail(ErrorKind::Cache, errno_message("remove", shown, errno));
    return {};
}

uint64_t bytes_at(int dirfd) {
    uint64_t total = 0;
    DIR* d = ::fdopendir(::dup(dirfd));
    if (!d) return 0;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        struct stat st;
        if (::fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISREG(st.st_mode)) {
            total += static_cast<uint64_t>(st.st_size);
        } else if (S_ISDIR(st.st_mode)) {
            UniqueFd sub(::openat(dirfd, n.c_str(), kDirFlags));
            if (sub.valid()) total += bytes_at(sub.get());
        }
    }
    ::closedir(d);
    return total;
}

}  // namespace

std::expected<void, Error> CacheDir::writable(const fs::path& rel) const {
    if (!read_only()) return {};
    return fail(ErrorKind::Cache, fmt::format("cannot write {}: it is in a read-only cache, which "
                                              "bekc never writes",
                                              path(rel).string()));
}

std::expected<int, Error> CacheDir::root_fd(bool create) const {
    create = create && !read_only();
    if (root_fd_ && root_fd_->valid()) return root_fd_->get();
    UniqueFd fd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid() && errno == ENOENT && create) {
        std::error_code ec;
        fs::create_directories(root_, ec);
        if (ec) return fail(ErrorKind::Cache, errno_message("create", root_, ec.value()));
        fd.reset(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
    if (!fd.valid()) return fail(ErrorKind::Cache, errno_message("open", root_, errno));
    root_fd_ = std::make_shared<UniqueFd>(std::move(fd));
    return root_fd_->get();
}

std::expected<UniqueFd, Error> CacheDir::open_dir(const fs::path& rel, bool create) const {
    create = create && !read_only();
    auto root = root_fd(create);
    if (!root) return std::unexpected(root.error());
    auto parts = components(rel);
    if (!parts.empty()) {
        // One call when the kernel can refuse links itself; any failure
        // (missing, a link) takes the walk, which creates or names the culprit.
        UniqueFd fast(open_beneath(*root, rel.lexically_normal().string(),
                                   O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (fast.valid()) return fast;
    }
    UniqueFd fd(::openat(*root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return fail(ErrorKind::Cache, errno_message("open", root_, errno));
    fs::path walked = root_;
    for (const auto& c : parts) {
        walked /= c;
        UniqueFd next(::openat(fd.get(), c.c_str(), kDirFlags));
        if (!next.valid() && errno == ENOENT && create) {
            if (::mkdirat(fd.get(), c.c_str(), 0777) != 0 && errno != EEXIST)
                return fail(ErrorKind::Cache, errno_message("create", walked, errno));
            next.reset(::openat(fd.get(), c.c_str(), kDirFlags));
        }
        if (!next.valid()) {
            // O_DIRECTORY fails a link with ENOTDIR before O_NOFOLLOW can say
            // ELOOP: name a planted link as what it is.
            int err = errno;
            struct stat st;
            if (err == ENOTDIR && ::fstatat(fd.get(), c.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                err = ELOOP;
            return fail(ErrorKind::Cache, errno_message("open", walked, err));
        }
        fd = std::move(next);
    }
    return fd;
}

std::expected<std::pair<UniqueFd, std::string>, Error> CacheDir::parent_of(const fs::path& rel,
                                                                           bool create) const {
    auto parts = components(rel);
    if (parts.empty()) throw InternalError("no file name in cache path " + rel.string());
    std::string name = parts.back();
    fs::path parent;
    for (size_t i = 0; i + 1 < parts.size(); ++i) parent /= parts[i];
    auto fd = open_dir(parent, create);
    if (!fd) return std::unexpected(fd.error());
    return std::pair{std::move(*fd), std::move(name)};
}

std::optional<CacheDir::Stat> CacheDir::stat(const fs::path& rel) const {
    if (components(rel).empty()) {
        struct stat st;
        if (::stat(root_.c_str(), &st) != 0) return std::nullopt;
        return to_stat(st);
    }
    auto parent = parent_of(rel, false);
    if (!parent) return std::nullopt;
    struct stat st;
    if (::fstatat(parent->first.get(), parent->second.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return std::nullopt;
    return to_stat(st);
}

std::expected<std::string, Error> CacheDir::read(const fs::path& rel, uint64_t max_bytes) const {
    if (auto root = root_fd(false); root && !components(rel).empty()) {
        UniqueFd fd(open_beneath(*root, rel.lexically_normal().string(),
                                 O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
        if (fd.valid()) return read_fd(std::move(fd), path(rel), ReadOptions{max_bytes, false});
    }
    auto parent = parent_of(rel, false);
    if (!parent) return std::unexpected(parent.error());
    return read_file_at(parent->first.get(), parent->second, path(rel),
                        ReadOptions{max_bytes, false});
}

std::expected<UniqueFd, Error> CacheDir::open_read(const fs::path& rel) const {
    auto parent = parent_of(rel, false);
    if (!parent) return std::unexpected(parent.error());
    return open_regular_at(parent->first.get(), parent->second, path(rel),
                           ReadOptions{kDefaultReadLimit * 8, false});
}

std::expected<void, Error> CacheDir::write(const fs::path& rel, std::string_view content) const {
    if (auto w = writable(rel); !w) return std::unexpected(w.error());
    auto parent = parent_of(rel, true);
    if (!parent) return std::unexpected(parent.error());
    return write_atomic_at(parent->first.get(), parent->second, content, path(rel));
}

std::expected<UniqueFd, Error> CacheDir::open_rw(const fs::path& rel) const {
    if (auto w = writable(rel); !w) return std::unexpected(w.error());
    auto parent = parent_of(rel, true);
    if (!parent) return std::unexpected(parent.error());
    UniqueFd fd(::openat(parent->first.get(), parent->second.c_str(),
                         O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666));
    if (!fd.valid()) return fail(ErrorKind::Cache, errno_message("open", path(rel), errno));
    struct stat st;
    if (::fstat(fd.get(), &st) != 0)
        return fail(ErrorKind::Cache, errno_message("open", path(rel), errno));
    if (!S_ISREG(st.st_mode))
        return fail(ErrorKind::Cache,
                    fmt::format("cannot open {}: it is not a regular file", path(rel).string()));
    return fd;
}

std::expected<uint64_t, Error> CacheDir::append(const fs::path& rel,
                                                std::string_view content) const {
    if (auto w = writable(rel); !w) return std::unexpected(w.error());
    auto parent = parent_of(rel, true);
    if (!parent) return std::unexpected(parent.error());
    UniqueFd fd(::openat(parent->first.get(), parent->second.c_str(),
                         O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                         0666));
    if (!fd.valid()) return fail(ErrorKind::Cache, errno_message("open", path(rel), errno));
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return fail(ErrorKind::Cache, fmt::format("cannot append to {}: it is not a regular file",
                                                  path(rel).string()));
    ssize_t n = ::write(fd.get(), content.data(), content.size());
    if (n != static_cast<ssize_t>(content.size()))
        return fail(ErrorKind::Cache, errno_message("write", path(rel), n < 0 ? errno : EIO));
    off_t end = ::lseek(fd.get(), 0, SEEK_CUR);  // O_APPEND: just past this write
    return end < 0 ? uint64_t{0} : static_cast<uint64_t>(end);
}

void CacheDir::touch(const fs::path& rel, bool create) const {
    if (read_only()) return;
    auto parent = parent_of(rel, false);
    if (!parent) return;
    UniqueFd fd(::openat(parent->first.get(), parent->second.c_str(),
                         O_WRONLY | (create ? O_CREAT : 0) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                         0666));
    if (!fd.valid()) return;
    struct stat st;
    if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) ::futimens(fd.get(), nullptr);
}

std::expected<void, Error> CacheDir::rename(const fs::path& from, const fs::path& to) const {
    if (auto w = writable(from); !w) return std::unexpected(w.error());
    auto src = parent_of(from, false);
    if (!src) return std::unexpected(src.error());
    auto dst = parent_of(to, true);
    if (!dst) return std::unexpected(dst.error());
    if (::renameat(src->first.get(), src->second.c_str(), dst->first.get(), dst->second.c_str()) !=
        0)
        return fail(
            ErrorKind::Cache,
            errno_message(fmt::format("rename {} to", path(from).string()), path(to), errno));
    return {};
}

std::expected<void, Error> CacheDir::make_dir(const fs::path& rel) const {
    if (auto w = writable(rel); !w) return std::unexpected(w.error());
    auto parent = parent_of(rel, true);
    if (!parent) return std::unexpected(parent.error());
    // mkdir honours the umask, so a shared cache's group can read entries.
    if (::mkdirat(parent->first.get(), parent->second.c_str(), 0777) != 0)
        return fail(ErrorKind::Cache, errno_message("create", path(rel), errno));
    return {};
}

std::expected<void, Error> CacheDir::remove_file(const fs::path& rel) const {
    if (auto w = writable(rel); !w) return std::unexpected(w.error());
    auto parent = parent_of(rel, false);
    if (!parent) return std::unexpected(parent.error());
    if (::unlinkat(parent->first.get(), parent->second.c_str(), 0) != 0 && errno != ENOENT)
        return fail(ErrorKind::Cache, errno_message("remove", path(rel), errno));
    return {};
}

std::expected<void, Error> CacheDir::remove_tree(const fs::path& rel) const {
    if (auto w = writable(rel); !w) return std::unexpected(w.error());
    auto parent = parent_of(rel, false);
    if (!parent) {
        // A missing parent means nothing to remove.
        if (!stat(rel)) return {};
        return std::unexpected(parent.error());
    }
    return remove_at(parent->first.get(), parent->second, path(rel));
}

std::expected<std::vector<CacheDir::Item>, Error> CacheDir::list(const fs::path& rel) const {
    std::vector<Item> items;
    auto fd = open_dir(rel, false);
    if (!fd) {
        if (!stat(rel)) return items;  // missing: nothing in it
        return std::unexpected(fd.error());
    }
    DIR* d = ::fdopendir(::dup(fd->get()));
    if (!d) return fail(ErrorKind::Cache, errno_message("list", path(rel), errno));
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        struct stat st;
        if (::fstatat(fd->get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        items.push_back(
            {std::move(n), S_ISDIR(st.st_mode), S_ISREG(st.st_mode), S_ISLNK(st.st_mode)});
    }
    ::closedir(d);
    return items;
}

uint64_t CacheDir::tree_bytes(const fs::path& rel) const {
    auto fd = open_dir(rel, false);
    if (!fd) {
        auto s = stat(rel);
        return s && s->file.is_regular ? s->file.size : 0;
    }
    return bytes_at(fd->get());
}

}  // namespace bekc
