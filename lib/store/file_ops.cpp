#include "store/file_ops.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

namespace bekc {

namespace {

int64_t to_ns(const timespec& t) {
    return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
    std::string name(buf);
    for (char& c : name) {
        if (c == '/' || c == '.') c = '_';  // the name is a file name part
    }
    return name;
}

}  // namespace

std::optional<FileStat> stat_file(const fs::path& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileStat{static_cast<uint64_t>(st.st_size), to_ns(st.st_mtim), to_ns(st.st_ctim),
                    S_ISREG(st.st_mode)};
}

std::expected<std::string, std::string> read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::unexpected(
            fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::expected<void, std::string> write_atomic(const fs::path& path, std::string_view content) {
    fs::path tmp = path;
    tmp += ".tmp." + unique_suffix();
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    auto fail = [&](std::string_view what) {
        std::string msg =
            fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(errno));
        if (fd >= 0) close(fd);
        unlink(tmp.c_str());
        return std::unexpected(msg);
    };
    if (fd < 0) return fail("create");
    for (size_t done = 0; done < content.size();) {
        ssize_t n = write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("write");
        done += static_cast<size_t>(n);
    }
    if (close(fd) != 0) {
        fd = -1;
        return fail("write");
    }
    fd = -1;
    if (rename(tmp.c_str(), path.c_str()) != 0) return fail("rename into");
    return {};
}

void touch(const fs::path& path) {
    if (utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0 || errno != ENOENT) return;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd >= 0) close(fd);
}

std::string unique_suffix() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static const std::string host = host_name();
    return fmt::format("{}.{}.{:016x}", host, getpid(), rng());
}

uint64_t tree_size(const fs::path& dir) {
    uint64_t total = 0;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code size_ec;
        if (it->is_regular_file(size_ec)) {
            uint64_t size = it->file_size(size_ec);
            if (!size_ec) total += size;
        }
    }
    return total;
}

int64_t now_ns() {
    using namespace std::chrono;
    return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace bekc
