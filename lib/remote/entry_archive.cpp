#include "remote/entry_archive.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace bekc {

namespace {

constexpr size_t kBlock = 512;
using Block = std::array<char, kBlock>;

// Header fields used here: offset and width in the 512-byte ustar header.
constexpr size_t kName = 0, kNameLen = 100, kMode = 100, kUid = 108, kGid = 116, kSize = 124,
                 kMtime = 136, kChecksum = 148, kType = 156, kMagic = 257, kUstarVersion = 263,
                 kPrefix = 345, kPrefixLen = 155;

// Closes on every path out, so an error return leaks nothing.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

std::string errno_text(const std::string& what, const fs::path& path) {
    return fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(errno));
}

bool write_all(int fd, const char* data, size_t size) {
    while (size > 0) {
        ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

// Reads exactly `size` bytes unless the file ends first; returns how many.
size_t read_full(int fd, char* data, size_t size) {
    size_t done = 0;
    while (done < size) {
        ssize_t n = ::read(fd, data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    return done;
}

// Zero-padded octal with a terminating NUL, as ustar wants.
void put_octal(Block& h, size_t offset, size_t width, uint64_t value) {
    std::string digits = fmt::format("{:0{}o}", value, width - 1);
    std::memcpy(h.data() + offset, digits.data(), width - 1);
}

unsigned checksum_of(const Block& h) {
    unsigned sum = 0;
    for (size_t i = 0; i < kBlock; ++i)
        sum += (i >= kChecksum && i < kChecksum + 8) ? ' ' : static_cast<unsigned char>(h[i]);
    return sum;
}

// Octal digits, optionally surrounded by spaces and NULs; nothing else (base-256
// sizes, used for members over 8 GiB, never occur in an entry).
std::optional<uint64_t> parse_octal(const Block& h, size_t offset, size_t width) {
    uint64_t value = 0;
    size_t i = offset, end = offset + width;
    while (i < end && h[i] == ' ') ++i;
    size_t digits = 0;
    for (; i < end && h[i] >= '0' && h[i] <= '7'; ++i, ++digits) value = value * 8 + (h[i] - '0');
    for (; i < end; ++i)
        if (h[i] != ' ' && h[i] != '\0') return std::nullopt;
    if (digits == 0 || digits > 21) return std::nullopt;
    return value;
}

std::string field(const Block& h, size_t offset, size_t width) {
    const char* begin = h.data() + offset;
    return std::string(begin, strnlen(begin, width));
}

// Opens a regular file for reading: no link followed, and O_NONBLOCK so a
// FIFO in its place is refused instead of waited on.
std::expected<int, Error> open_regular(const fs::path& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return fail(ErrorKind::Cache, errno_text("open", path));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail(ErrorKind::Cache,
                    fmt::format("cannot read {}: not a regular file", path.string()));
    }
    return fd;
}

}  // namespace

bool is_plain_member_name(const std::string& name) {
    if (name.empty() || name == "." || name == ".." || name.size() >= kNameLen) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u > 0x20 && u < 0x7f && c != '/' && c != '\\';
    });
}

std::expected<void, Error> write_entry_archive(const fs::path& dir,
                                               const std::vector<std::string>& names,
                                               const fs::path& archive) {
    Fd out{::open(archive.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
    if (out.fd < 0) return fail(ErrorKind::Cache, errno_text("create", archive));
    std::vector<char> buffer(1 << 16);
    for (const auto& name : names) {
        if (!is_plain_member_name(name))
            return fail(ErrorKind::Cache, "cannot archive the file name " + name);
        fs::path file = dir / name;
        auto opened = open_regular(file);
        if (!opened) return std::unexpected(opened.error());
        Fd in{*opened};
        off_t size = ::lseek(in.fd, 0, SEEK_END);
        if (size < 0 || ::lseek(in.fd, 0, SEEK_SET) != 0)
            return fail(ErrorKind::Cache, errno_text("seek", file));
        if (static_cast<uint64_t>(size) >= (uint64_t{1} << 33))  // 11 octal digits
            return fail(ErrorKind::Cache,
                        file.string() + " is too large for a ustar archive (8 GiB)");
        Block h{};
        std::memcpy(h.data() + kName, name.data(), name.size());
        put_octal(h, kMode, 8, 0644);
        put_octal(h, kUid, 8, 0);
        put_octal(h, kGid, 8, 0);
        put_octal(h, kSize, 12, static_cast<uint64_t>(size));
        put_octal(h, kMtime, 12, 0);
        h[kType] = '0';
        std::memcpy(h.data() + kMagic, "ustar", 6);
        std::memcpy(h.data() + kUstarVersion, "00", 2);
        std::string sum = fmt::format("{:06o}", checksum_of(h));
        std::memcpy(h.data() + kChecksum, sum.data(), 6);
        h[kChecksum + 6] = '\0';
        h[kChecksum + 7] = ' ';
        if (!write_all(out.fd, h.data(), kBlock))
            return fail(ErrorKind::Cache, errno_text("write", archive));
        // Exactly `size` bytes, even if the file grew meanwhile: the header
        // has already promised that many.
        uint64_t left = static_cast<uint64_t>(size);
        while (left > 0) {
            size_t want = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
            if (read_full(in.fd, buffer.data(), want) != want)
                return fail(ErrorKind::Cache,
                            fmt::format("{} shrank while it was archived", file.string()));
            if (!write_all(out.fd, buffer.data(), want))
                return fail(ErrorKind::Cache, errno_text("write", archive));
            left -= want;
        }
        Block pad{};
        size_t tail = static_cast<size_t>(size) % kBlock;
        if (tail != 0 && !write_all(out.fd, pad.data(), kBlock - tail))
            return fail(ErrorKind::Cache, errno_text("write", archive));
    }
    Block zero{};
    for (int i = 0; i < 2; ++i)
        if (!write_all(out.fd, zero.data(), kBlock))
            return fail(ErrorKind::Cache, errno_text("write", archive));
    if (::fsync(out.fd) != 0 && errno != EINVAL)
        return fail(ErrorKind::Cache, errno_text("sync", archive));
    return {};
}

std::expected<std::vector<std::string>, Error> read_entry_archive(const fs::path& archive,
                                                                  const fs::path& dir,
                                                                  const ArchiveLimits& limits) {
    auto opened = open_regular(archive);
    if (!opened) return std::unexpected(opened.error());
    Fd in{*opened};
    uint64_t total = 0;
    auto out_of_time = [&] { return std::chrono::steady_clock::now() >= limits.deadline; };
    std::vector<std::string> names;
    std::set<std::string> seen;
    std::vector<char> buffer(1 << 16);
    for (;;) {
        Block h;
        if (read_full(in.fd, h.data(), kBlock) != kBlock)
            return fail(ErrorKind::Cache, "the archive is truncated");
        if (std::all_of(h.begin(), h.end(), [](char c) { return c == '\0'; })) break;  // end marker
        if (std::memcmp(h.data() + kMagic, "ustar", 5) != 0)
            return fail(ErrorKind::Cache, "not a ustar archive");
        auto sum = parse_octal(h, kChecksum, 8);
        if (!sum || *sum != checksum_of(h))
            return fail(ErrorKind::Cache, "an archive header has a bad checksum");
        std::string name = field(h, kName, kNameLen);
        if (h[kType] != '0' && h[kType] != '\0')
            return fail(ErrorKind::Cache,
                        fmt::format("archive member '{}' is not a regular file", name));
        if (!field(h, kPrefix, kPrefixLen).empty() || !is_plain_member_name(name))
            return fail(ErrorKind::Cache,
                        fmt::format("archive member '{}' is not a plain file name", name));
        if (!seen.insert(name).second)
            return fail(ErrorKind::Cache, "archive member '" + name + "' appears twice");
        if (names.size() == kMaxArchiveMembers)
            return fail(ErrorKind::Cache, "the archive has too many members");
        auto size = parse_octal(h, kSize, 12);
        if (!size)
            return fail(ErrorKind::Cache, fmt::format("archive member '{}' has a bad size", name));
        // Before anything is written: a header may claim any size.
        if (*size > limits.max_bytes - total)
            return fail(
                ErrorKind::Cache,
                fmt::format("archive member '{}' ({} bytes) takes the entry past its limit of {} "
                            "bytes",
                            name, *size, limits.max_bytes));
        total += *size;
        fs::path file = dir / name;
        // O_EXCL|O_NOFOLLOW: never through a link, never over another member.
        Fd out{::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666)};
        if (out.fd < 0) return fail(ErrorKind::Cache, errno_text("create", file));
        uint64_t left = *size;
        while (left > 0) {
            size_t want = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
            if (read_full(in.fd, buffer.data(), want) != want)
                return fail(ErrorKind::Cache, "the archive is truncated");
            if (!write_all(out.fd, buffer.data(), want))
                return fail(ErrorKind::Cache, errno_text("write", file));
            left -= want;
            if (out_of_time())
                return fail(ErrorKind::Cache, "the time limit passed while unpacking it");
        }
        size_t tail = static_cast<size_t>(*size % kBlock);
        if (tail != 0 && read_full(in.fd, buffer.data(), kBlock - tail) != kBlock - tail)
            return fail(ErrorKind::Cache, "the archive is truncated");
        names.push_back(std::move(name));
    }
    return names;
}

}  // namespace bekc
