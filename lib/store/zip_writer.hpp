// A ZIP archive written entry by entry, uncompressed (method 0, "stored"):
// what a wheel needs (store/pack_archive.hpp), without zlib. Entries carry a
// fixed time (1980-01-01), so the same files give the same bytes. No ZIP64:
// an archive or entry of 4 GiB or more is refused.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace fs = std::filesystem;

// CRC-32 (ISO-HDLC, the one ZIP and gzip use) of `bytes`, continuing `crc`.
uint32_t crc32(std::string_view bytes, uint32_t crc = 0);

// RFC 4648 §5 base64url without padding, as a wheel's RECORD writes hashes.
std::string base64url_nopad(std::string_view bytes);

class ZipWriter {
  public:
    // Creates `path`, which must not exist (O_EXCL).
    static std::expected<ZipWriter, Error> create(const fs::path& path);

    // One file, mode 0644, named `name` ('/'-separated, relative).
    std::expected<void, Error> add(const std::string& name, std::string_view bytes);
    // The central directory and its end record; the file is complete.
    std::expected<void, Error> finish();

  private:
    ZipWriter(UniqueFd fd, fs::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
    std::expected<void, Error> put(std::string_view bytes);

    UniqueFd fd_;
    fs::path path_;
    uint64_t offset_ = 0;
    uint32_t count_ = 0;
    std::string central_;  // the central directory, built as entries are added
};

}  // namespace bekc
