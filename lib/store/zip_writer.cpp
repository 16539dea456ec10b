#include "store/zip_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace bekc {

namespace {

constexpr uint16_t kVersionNeeded = 20;                 // 2.0: stored files in directories
constexpr uint16_t kMadeByUnix = (3 << 8) | 20;         // so the external attributes are a mode
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, time 00:00
constexpr uint32_t kFileMode = 0100644;

// Little-endian fields, as every ZIP header has them.
void le16(std::string& out, uint16_t v) {
    out.push_back(static_cast<char>(v & 0xff));
    out.push_back(static_cast<char>(v >> 8));
}

void le32(std::string& out, uint32_t v) {
    le16(out, static_cast<uint16_t>(v & 0xffff));
    le16(out, static_cast<uint16_t>(v >> 16));
}

std::array<uint32_t, 256> crc_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t n = 0; n < 256; ++n) {
        uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
    return table;
}

// The fields a local header and a central one share, from "version needed".
void common_fields(std::string& out, uint32_t crc, uint32_t size, size_t name_size) {
    le16(out, kVersionNeeded);
    le16(out, 0x0800);  // the name is UTF-8
    le16(out, 0);       // stored
    le16(out, 0);       // time
    le16(out, kDosDate);
    le32(out, crc);
    le32(out, size);  // compressed: the same
    le32(out, size);
    le16(out, static_cast<uint16_t>(name_size));
    le16(out, 0);  // extra field
}

}  // namespace

uint32_t crc32(std::string_view bytes, uint32_t crc) {
    static const std::array<uint32_t, 256> table = crc_table();
    crc = ~crc;
    for (unsigned char b : bytes) crc = table[(crc ^ b) & 0xff] ^ (crc >> 8);
    return ~crc;
}

std::string base64url_nopad(std::string_view bytes) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) |
                     uint8_t(bytes[i + 2]);
        for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
    }
    size_t rest = bytes.size() - i;
    if (rest == 0) return out;
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    if (rest == 2) out.push_back(kAlphabet[(v >> 6) & 63]);
    return out;
}

std::expected<ZipWriter, Error> ZipWriter::create(const fs::path& path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return fail(ErrorKind::Cache,
                    fmt::format("cannot create {}: {}", path.string(), std::strerror(errno)));
    return ZipWriter(UniqueFd(fd), path);
}

std::expected<void, Error> ZipWriter::put(std::string_view bytes) {
    while (!bytes.empty()) {
        ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return fail(ErrorKind::Cache, fmt::format("cannot write {}: {}", path_.string(),
                                                      std::strerror(n < 0 ? errno : ENOSPC)));
        bytes.remove_prefix(static_cast<size_t>(n));
        offset_ += static_cast<uint64_t>(n);
    }
    return {};
}

std::expected<void, Error> ZipWriter::add(const std::string& name, std::string_view bytes) {
    constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
    if (bytes.size() >= kMax || offset_ + bytes.size() + name.size() + 30 >= kMax ||
        name.size() > 0xffff || count_ == 0xffff)
        return fail(ErrorKind::Cache, fmt::format("{}: too large for a ZIP without ZIP64 (at {})",
                                                  path_.string(), name));
    uint32_t crc = crc32(bytes), size = static_cast<uint32_t>(bytes.size());
    std::string local;
    le32(local, 0x04034b50);
    common_fields(local, crc, size, name.size());
    local += name;
    le32(central_, 0x02014b50);
    le16(central_, kMadeByUnix);
    common_fields(central_, crc, size, name.size());
    le16(central_, 0);  // comment
    le16(central_, 0);  // disk
    le16(central_, 0);  // internal attributes
    le32(central_, kFileMode << 16);
    le32(central_, static_cast<uint32_t>(offset_));
    central_ += name;
    ++count_;
    if (auto w = put(local); !w) return w;
    return put(bytes);
}

std::expected<void, Error> ZipWriter::finish() {
    uint64_t start = offset_;
    if (start + central_.size() >= std::numeric_limits<uint32_t>::max())
        return fail(ErrorKind::Cache,
                    fmt::format("{}: too large for a ZIP without ZIP64", path_.string()));
    std::string end;
    le32(end, 0x06054b50);
    le16(end, 0);  // this disk
    le16(end, 0);  // the central directory's disk
    le16(end, static_cast<uint16_t>(count_));
    le16(end, static_cast<uint16_t>(count_));
    le32(end, static_cast<uint32_t>(central_.size()));
    le32(end, static_cast<uint32_t>(start));
    le16(end, 0);  // comment
    if (auto w = put(central_); !w) return w;
    if (auto w = put(end); !w) return w;
    if (::fsync(fd_.get()) != 0)
        return fail(ErrorKind::Cache,
                    fmt::format("cannot write {}: {}", path_.string(), std::strerror(errno)));
    fd_.reset();
    return {};
}

}  // namespace bekc
