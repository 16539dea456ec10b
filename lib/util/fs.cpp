#include "util/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

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

std::expected<void, std::string> check_regular(int fd, const fs::path& shown, ReadOptions options) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return std::unexpected(errno_message("read", shown, errno));
    if (!S_ISREG(st.st_mode))
        return std::unexpected(
            fmt::format("cannot read {}: it is {}", shown.string(), kind_of(st.st_mode)));
    if (static_cast<uint64_t>(st.st_size) > options.max_bytes)
        return std::unexpected(fmt::format("cannot read {}: it is larger than {} bytes",
                                           shown.string(), options.max_bytes));
    return {};
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

std::string errno_message(std::string_view what, const fs::path& path, int err) {
    if (err == ELOOP)
        return fmt::format("cannot {} {}: it is a symbolic link, which bekc does not follow here",
                           what, path.string());
    return fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(err));
}

std::expected<UniqueFd, std::string> open_regular_at(int dirfd, const fs::path& name,
                                                     const fs::path& shown, ReadOptions options) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (!options.follow_symlinks) flags |= O_NOFOLLOW;
    UniqueFd fd(::openat(dirfd, name.c_str(), flags));
    if (!fd.valid()) return std::unexpected(errno_message("read", shown, errno));
    if (auto ok = check_regular(fd.get(), shown, options); !ok) return std::unexpected(ok.error());
    return fd;
}

std::expected<std::string, std::string> read_fd(UniqueFd fd, const fs::path& shown,
                                                ReadOptions options) {
    if (auto ok = check_regular(fd.get(), shown, options); !ok) return std::unexpected(ok.error());
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::unexpected(errno_message("read", shown, errno));
        if (n == 0) break;
        // The size was checked, but a file may grow while read (and /proc
        // files report size 0).
        if (out.size() + static_cast<size_t>(n) > options.max_bytes)
            return std::unexpected(fmt::format("cannot read {}: it is larger than {} bytes",
                                               shown.string(), options.max_bytes));
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

std::expected<std::string, std::string> read_file_at(int dirfd, const fs::path& name,
                                                     const fs::path& shown, ReadOptions options) {
    auto fd = open_regular_at(dirfd, name, shown, options);
    if (!fd) return std::unexpected(fd.error());
    return read_fd(std::move(*fd), shown, options);
}

std::expected<std::string, std::string> read_file(const fs::path& path, ReadOptions options) {
    return read_file_at(AT_FDCWD, path, path, options);
}

std::expected<void, std::string> write_atomic_at(int dirfd, const std::string& name,
                                                 std::string_view content, const fs::path& shown) {
    std::string tmp = name + ".tmp." + unique_suffix();
    int fd =
        ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) return std::unexpected(errno_message("write", shown, errno));
    auto fail = [&](int err) {
        if (fd >= 0) ::close(fd);
        ::unlinkat(dirfd, tmp.c_str(), 0);
        return std::unexpected(errno_message("write", shown, err));
    };
    for (size_t done = 0; done < content.size();) {
        ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(errno);
        done += static_cast<size_t>(n);
    }
    // close() reports deferred write errors (NFS, ENOSPC on some filesystems).
    int closed = ::close(fd);
    fd = -1;
    if (closed != 0) return fail(errno);
    if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) return fail(errno);
    return {};
}

std::expected<void, std::string> write_atomic(const fs::path& path, std::string_view content) {
    fs::path parent = path.parent_path();
    if (parent.empty()) parent = ".";
    UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) return std::unexpected(errno_message("write", path, errno));
    return write_atomic_at(dir.get(), path.filename().string(), content, path);
}

fs::path private_user_path() {
    return fmt::format("/tmp/bekc-{}", ::getuid());
}

std::expected<fs::path, std::string> private_user_dir() {
    fs::path mine = private_user_path();
    if (::mkdir(mine.c_str(), 0700) != 0 && errno != EEXIST)
        return std::unexpected(errno_message("create", mine, errno));
    UniqueFd fd(::open(mine.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || st.st_uid != ::getuid())
        return std::unexpected(
            fmt::format("cannot use {}: it must be a directory of your own (it holds build "
                        "outputs); remove it",
                        mine.string()));
    if ((st.st_mode & 077) != 0 && ::fchmod(fd.get(), 0700) != 0)
        return std::unexpected(errno_message("restrict", mine, errno));
    return mine;
}

std::expected<fs::path, std::string> private_temp_dir(const std::string& name) {
    auto mine = private_user_dir();
    if (!mine) return mine;
    fs::path dir = *mine / name;
    std::error_code ec;
    fs::remove_all(dir, ec);  // a killed build's leftovers; links are removed, not followed
    if (::mkdir(dir.c_str(), 0700) != 0)
        return std::unexpected(errno_message("create", dir, errno));
    return dir;
}

std::string unique_suffix() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static const std::string host = host_name();
    return fmt::format("{}.{}.{:016x}", host, getpid(), rng());
}

fs::path resolved_path(const fs::path& path) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(fs::absolute(path), ec);
    return ec ? fs::absolute(path).lexically_normal() : r;
}

}  // namespace bekc
