#include "util/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace bekc {

namespace {

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
    std::string name(buf);
    for (char& c : name) {
        if (c == '/' || c == '.') c = '_';  // the name is a file name part
    }
    return name;
}

const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::string too_large(const fs::path& shown, uint64_t max_bytes) {
    return fmt::format("cannot read {}: it is larger than {} bytes", shown.string(), max_bytes);
}

// What fstat says of `fd`, when it is a regular file within the limit.
std::expected<struct stat, Error> check_regular(int fd, const fs::path& shown,
                                                ReadOptions options) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return fail(ErrorKind::Cache, errno_message("read", shown, errno));
    if (!S_ISREG(st.st_mode))
        return fail(ErrorKind::Cache,
                    fmt::format("cannot read {}: it is {}", shown.string(), kind_of(st.st_mode)));
    if (static_cast<uint64_t>(st.st_size) > options.max_bytes)
        return fail(ErrorKind::Cache, too_large(shown, options.max_bytes));
    return st;
}

// Reads a checked regular file to its end straight into the string, sized by
// the stat: no intermediate buffer, no copy.
std::expected<std::string, Error> read_checked(int fd, const struct stat& st, const fs::path& shown,
                                               ReadOptions options) {
    // The size was checked, but a file may grow while read (and /proc files
    // report size 0): one byte over the limit says it is too large.
    const size_t cap = options.max_bytes >= SIZE_MAX - 1
                           ? SIZE_MAX - 1
                           : static_cast<size_t>(options.max_bytes) + 1;
    const size_t want = std::min(cap, std::max<size_t>(static_cast<size_t>(st.st_size) + 1, 4096));
    std::string out;
    size_t used = 0;
    for (;;) {
        if (used == out.size()) {
            if (used >= cap) return fail(ErrorKind::Cache, too_large(shown, options.max_bytes));
            out.resize(std::min(cap, std::max(want, used * 2)));
        }
        ssize_t n = ::read(fd, out.data() + used, out.size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(ErrorKind::Cache, errno_message("read", shown, errno));
        if (n == 0) break;
        used += static_cast<size_t>(n);
    }
    out.resize(used);
    return out;
}

std::expected<UniqueFd, Error> open_at(int dirfd, const fs::path& name, const fs::path& shown,
                                       ReadOptions options) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (!options.follow_symlinks) flags |= O_NOFOLLOW;
    UniqueFd fd(::openat(dirfd, name.c_str(), flags));
    if (!fd.valid()) return fail(ErrorKind::Cache, errno_message("read", shown, errno));
    return fd;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
}

int UniqueFd::release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
}

void UniqueFd::reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

std::string kind_of(fs::file_type type) {
    switch (type) {
        case fs::file_type::directory:
            return "a directory";
        case fs::file_type::fifo:
            return "a FIFO";
        case fs::file_type::character:
        case fs::file_type::block:
            return "a device";
        case fs::file_type::socket:
            return "a socket";
        default:
            return "not a regular file";
    }
}

std::expected<void, Error> check_writable_regular(const fs::path& path) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found || st.type() == fs::file_type::regular) return {};
    if (st.type() == fs::file_type::none || st.type() == fs::file_type::unknown)
        return fail(ErrorKind::Cache,
                    fmt::format("cannot write {}: {}", path.string(), ec.message()));
    return fail(
        ErrorKind::Cache,
        fmt::format(
            "{} is not a regular file (it is {}), and bekc writes only regular files there; name "
            "a regular file",
            path.string(), kind_of(st.type())));
}

std::string errno_message(std::string_view what, const fs::path& path, int err) {
    if (err == ELOOP)
        return fmt::format("cannot {} {}: it is a symbolic link, which bekc does not follow here",
                           what, path.string());
    return fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(err));
}

std::expected<RegularFile, Error> open_regular_file_at(int dirfd, const fs::path& name,
                                                       const fs::path& shown, ReadOptions options) {
    auto fd = open_at(dirfd, name, shown, options);
    if (!fd) return std::unexpected(fd.error());
    auto st = check_regular(fd->get(), shown, options);
    if (!st) return std::unexpected(st.error());
    return RegularFile{std::move(*fd), *st};
}

std::expected<UniqueFd, Error> open_regular_at(int dirfd, const fs::path& name,
                                               const fs::path& shown, ReadOptions options) {
    auto file = open_regular_file_at(dirfd, name, shown, options);
    if (!file) return std::unexpected(file.error());
    return std::move(file->fd);
}

std::expected<std::string, Error> read_fd(UniqueFd fd, const fs::path& shown, ReadOptions options) {
    auto st = check_regular(fd.get(), shown, options);
    if (!st) return std::unexpected(st.error());
    return read_checked(fd.get(), *st, shown, options);
}

std::expected<std::string, Error> read_file_at(int dirfd, const fs::path& name,
                                               const fs::path& shown, ReadOptions options) {
    auto fd = open_at(dirfd, name, shown, options);
    if (!fd) return std::unexpected(fd.error());
    return read_fd(std::move(*fd), shown, options);
}

std::expected<std::string, Error> read_file(const fs::path& path, ReadOptions options) {
    return read_file_at(AT_FDCWD, path, path, options);
}

std::expected<void, Error> write_atomic_at(int dirfd, const std::string& name,
                                           std::string_view content, const fs::path& shown) {
    std::string tmp = name + ".tmp." + unique_suffix();
    int fd =
        ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) return fail(ErrorKind::Cache, errno_message("write", shown, errno));
    auto failed = [&](int err) {
        if (fd >= 0) ::close(fd);
        ::unlinkat(dirfd, tmp.c_str(), 0);
        return fail(ErrorKind::Cache, errno_message("write", shown, err));
    };
    for (size_t done = 0; done < content.size();) {
        ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return failed(errno);
        done += static_cast<size_t>(n);
    }
    // close() reports deferred write errors (NFS, ENOSPC on some filesystems).
    int closed = ::close(fd);
    fd = -1;
    if (closed != 0) return failed(errno);
    if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) return failed(errno);
    return {};
}

std::expected<void, Error> write_atomic(const fs::path& path, std::string_view content) {
    fs::path parent = path.parent_path();
    if (parent.empty()) parent = ".";
    UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) return fail(ErrorKind::Cache, errno_message("write", path, errno));
    return write_atomic_at(dir.get(), path.filename().string(), content, path);
}

bool shell_safe_path(const fs::path& path) {
    return path.string().find_first_of("'\"\\$`!*?;&|<>()[]{}#~ \t\n") == std::string::npos;
}

namespace {

// Each candidate for private_user_dir(places), in order.
std::vector<fs::path> private_candidates(const PrivateDirPlaces& places) {
    std::vector<fs::path> out{private_user_path()};
    auto absolute = [](const std::optional<std::string>& v) {
        return v && v->starts_with('/') ? std::optional<fs::path>(*v) : std::nullopt;
    };
    if (auto xdg = absolute(places.xdg_runtime_dir)) out.push_back(*xdg / "bekc");
    if (auto tmp = absolute(places.tmpdir))
        out.push_back(*tmp / fmt::format("bekc-{}", ::getuid()));
    if (!places.fallback.empty()) out.push_back(places.fallback);
    return out;
}

// Why `dir` cannot be this user's private directory, or "" when it now is.
std::string make_private(const fs::path& dir) {
    if (!shell_safe_path(dir)) return "its path has characters nvcc's shell would interpret";
    // In a directory others may write to without the sticky bit, another user
    // could rename ours away and put one of theirs in its place.
    struct stat parent;
    if (::stat(dir.parent_path().c_str(), &parent) != 0) return std::strerror(errno);
    if ((parent.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (parent.st_mode & S_ISVTX) == 0)
        return "others may rename entries of " + dir.parent_path().string();
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return std::strerror(errno);
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return "it is not a directory";
    if (st.st_uid != ::getuid()) return fmt::format("it belongs to user {}", st.st_uid);
    if ((st.st_mode & 077) != 0 && ::fchmod(fd.get(), 0700) != 0) return std::strerror(errno);
    return {};
}

}  // namespace

fs::path private_user_path() {
    return fmt::format("/tmp/bekc-{}", ::getuid());
}

std::expected<fs::path, Error> private_user_dir(const PrivateDirPlaces& places) {
    std::string tried;
    for (const auto& dir : private_candidates(places)) {
        std::string why = make_private(dir);
        if (why.empty()) return dir;
        tried += fmt::format("{}{} ({})", tried.empty() ? "" : ", ", dir.string(), why);
    }
    return fail(
        ErrorKind::Cache,
        fmt::format(
            "found no directory of your own for build outputs: tried {}; set TMPDIR to a directory "
            "only you can write to",
            tried));
}

void remove_stale_private_dirs(const fs::path& dir, const std::string& prefix,
                               std::chrono::seconds max_age) {
    // The kind of directory: "build" for "build.<hash>", so that a build of
    // other inputs sweeps what a killed one left too.
    const std::string kind = prefix.substr(0, prefix.find('.')) + ".";
    const auto cutoff = fs::file_time_type::clock::now() - max_age;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code e;
        // A directory itself, never through a link; remove_all removes links,
        // not what they name.
        if (!it->path().filename().string().starts_with(kind) || it->is_symlink(e) ||
            !it->is_directory(e) || it->last_write_time(e) > cutoff || e)
            continue;
        fs::remove_all(it->path(), e);
    }
}

std::expected<fs::path, Error> private_temp_dir(const PrivateDirPlaces& places,
                                                const std::string& prefix) {
    auto mine = private_user_dir(places);
    if (!mine) return mine;
    // A bekc killed outright (SIGKILL, out of memory) cannot remove its own.
    remove_stale_private_dirs(*mine, prefix, kStalePrivateDirAge);
    std::string pattern = (*mine / (prefix + ".XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
        return fail(ErrorKind::Cache, errno_message("create", fs::path(pattern), errno));
    return fs::path(pattern);
}

std::string unique_suffix() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static const std::string host = host_name();
    return fmt::format("{}.{}.{:016x}", host, getpid(), rng());
}

namespace {

// Symbolic links followed in one resolution before giving up, as the kernel's
// limit (ELOOP).
constexpr int kMaxLinks = 40;

std::string parent_of(const std::string& real) {
    size_t slash = real.rfind('/');
    return slash == 0 || slash == std::string::npos ? std::string("/") : real.substr(0, slash);
}

}  // namespace

std::optional<std::string> RealPaths::child(const std::string& real, std::string_view name,
                                            int depth) {
    std::string path = real;
    if (path.back() != '/') path += '/';
    path += name;
    if (auto it = memo_.find(path); it != memo_.end()) return it->second;
    struct stat st;
    std::optional<std::string> found;
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            failed_ = true;  // not memoised: the next path asks again
            return std::nullopt;
        }
    } else if (!S_ISLNK(st.st_mode)) {
        found = path;
    } else if (depth >= kMaxLinks) {
        failed_ = true;
        return std::nullopt;
    } else {
        std::error_code ec;
        fs::path target = fs::read_symlink(path, ec);
        if (ec) {
            failed_ = true;
            return std::nullopt;
        }
        auto [real_target, rest] =
            walk(target.is_absolute() ? std::string("/") : real, target.native(), depth + 1);
        if (rest == std::string_view::npos) found = std::move(real_target);
        if (failed_) return std::nullopt;
    }
    memo_.emplace(std::move(path), found);
    return found;
}

std::pair<std::string, size_t> RealPaths::walk(std::string cur, std::string_view path, int depth) {
    for (size_t i = 0; i <= path.size();) {
        size_t end = std::min(path.find('/', i), path.size());
        std::string_view c = path.substr(i, end - i);
        if (c == "..") {
            cur = parent_of(cur);
        } else if (!c.empty() && c != ".") {
            auto next = child(cur, c, depth);
            if (!next) return {std::move(cur), i};
            cur = std::move(*next);
        }
        i = end + 1;
    }
    return {std::move(cur), std::string_view::npos};
}

fs::path RealPaths::resolve(const fs::path& path) {
    std::error_code ec;
    if (!path.is_absolute()) return fs::weakly_canonical(path, ec);
    failed_ = false;
    const std::string& s = path.native();
    // Most paths differ from one another only in their last component: the
    // directory is resolved once, by its spelling.
    size_t slash = s.rfind('/');
    std::string_view name = std::string_view(s).substr(slash + 1);
    if (slash > 0 && !name.empty() && name != "." && name != "..") {
        std::string dir = s.substr(0, slash);
        auto known = dirs_.find(dir);
        if (known == dirs_.end()) {
            auto [real, rest] = walk("/", dir, 0);
            if (failed_) return {};
            std::optional<std::string> found;
            if (rest == std::string_view::npos) found = std::move(real);
            known = dirs_.emplace(std::move(dir), std::move(found)).first;
        }
        if (known->second) {
            auto real = child(*known->second, name, 0);
            if (failed_) return {};
            if (real) return *real;
            return (fs::path(*known->second) / name).lexically_normal();
        }
    }
    // What does not exist is appended and normalised, as weakly_canonical does.
    auto [real, rest] = walk("/", s, 0);
    if (failed_) return {};
    if (rest == std::string_view::npos) return real;
    return (fs::path(real) / s.substr(rest)).lexically_normal();
}

namespace {

// Whether `s` has a ".." component.
bool has_dot_dot(std::string_view s) {
    for (size_t at = s.find(".."); at != std::string_view::npos; at = s.find("..", at + 2))
        if ((at == 0 || s[at - 1] == '/') && (at + 2 == s.size() || s[at + 2] == '/')) return true;
    return false;
}

}  // namespace

const std::string& PhysicalPaths::up(const std::string& dir) {
    if (auto it = up_.find(dir); it != up_.end()) return it->second;
    std::string from = dir;
    struct stat st;
    if (!dir.empty() && ::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        std::error_code ec;
        fs::path real = fs::canonical(dir, ec);
        // A dangling link or a loop: the kernel would not get past it, and
        // no compiler reported a file through it.
        if (!ec) from = real.native();
    }
    size_t slash = from.rfind('/');
    return up_.emplace(dir, slash == std::string::npos ? std::string() : from.substr(0, slash))
        .first->second;
}

fs::path PhysicalPaths::normal(const fs::path& path) {
    fs::path abs = fs::absolute(path);
    fs::path lexical = abs.lexically_normal();
    if (!has_dot_dot(abs.native())) return lexical;
    std::string out;  // "" stands for "/"
    for (const auto& part : abs.relative_path()) {
        const std::string& c = part.native();
        if (c.empty() || c == ".") continue;
        if (c == "..") {
            out = up(out);
        } else {
            out += '/';
            out += c;
        }
    }
    if (lexical.native().ends_with('/')) out += '/';  // a directory, as spelt
    return out.empty() ? fs::path("/") : fs::path(out);
}

fs::path physical_normal(const fs::path& path) {
    PhysicalPaths paths;
    return paths.normal(path);
}

namespace {

// An absolute path without empty, "." or ".." components (a trailing '/'
// allowed): one whose components its spelling shows.
bool is_plain_absolute(std::string_view s) {
    if (s.empty() || s[0] != '/') return false;
    for (size_t i = 1; i < s.size();) {
        size_t end = std::min(s.find('/', i), s.size());
        std::string_view c = s.substr(i, end - i);
        if ((c.empty() && end != s.size()) || c == "." || c == "..") return false;
        i = end + 1;
    }
    return true;
}

}  // namespace

bool path_is_under(const fs::path& path, const fs::path& dir) {
    std::string_view ps = path.native(), ds = dir.native();
    if (is_plain_absolute(ps) && is_plain_absolute(ds)) {
        while (ds.size() > 1 && ds.back() == '/') ds.remove_suffix(1);
        while (ps.size() > 1 && ps.back() == '/') ps.remove_suffix(1);
        if (ds == "/") return true;
        return ps.substr(0, ds.size()) == ds && (ps.size() == ds.size() || ps[ds.size()] == '/');
    }
    auto rel = path.lexically_normal().lexically_relative(dir.lexically_normal());
    return !rel.empty() && *rel.begin() != "..";
}

Presence presence(const fs::path& path) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) return Presence::Absent;
    return fs::is_regular_file(st) ? Presence::File : Presence::Other;
}

fs::path resolved_path(const fs::path& path) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(fs::absolute(path), ec);
    return ec ? fs::absolute(path).lexically_normal() : r;
}

}  // namespace bekc
