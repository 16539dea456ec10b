#include "util/fs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "util/error.hpp"

namespace bekc {

std::optional<std::string> read_file(const fs::path& path, std::string* error) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (error) *error = std::strerror(errno);
        return std::nullopt;
    }
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            if (error) *error = std::strerror(errno);
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

void write_file_atomic(const fs::path& path, std::string_view content) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    fs::path tmp = path;
    tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng() % 1000000);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        throw FatalError("cannot write " + path.string() + ": " + std::strerror(errno), kExitCache);
    size_t done = 0;
    while (done < content.size()) {
        ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            throw FatalError("cannot write " + path.string() + ": " + std::strerror(e), kExitCache);
        }
        done += static_cast<size_t>(n);
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        throw FatalError("cannot write " + path.string() + ": " + std::strerror(e), kExitCache);
    }
}

fs::path resolved_path(const fs::path& path) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(fs::absolute(path), ec);
    return ec ? fs::absolute(path).lexically_normal() : r;
}

}  // namespace bekc
