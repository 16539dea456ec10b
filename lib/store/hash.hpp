// Content hashes. SHA-256 is the cryptographic one: cache keys and the
// manifest's library_sha256. XXH3-128 is the fast one (tens of GB/s): it only
// answers "did this file change since we last looked", where speed matters
// and nobody is trying to forge a collision.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

#include "store/file_ops.hpp"
#include "util/error.hpp"

namespace bekc {

// Lowercase hex, 64 digits.
std::string sha256_hex(std::string_view bytes);
// The file is streamed, never loaded whole, and must be a regular file (a
// FIFO or device is an error, never a hang). The error names the file and why.
std::expected<std::string, Error> sha256_file(const std::filesystem::path& path);
// The same for an open descriptor; `shown` names it in errors.
std::expected<std::string, Error> sha256_fd(int fd, const std::filesystem::path& shown);

// XXH3-128, lowercase hex, 32 digits.
std::string xxh128_hex(std::string_view bytes);
std::expected<std::string, Error> xxh128_file(const std::filesystem::path& path);
std::expected<std::string, Error> xxh128_fd(int fd, const std::filesystem::path& shown);
// XXH3-64: the check that ends a record file (store/direct_record.hpp).
uint64_t xxh3_64(std::string_view bytes);

// One read of a file for both keys: the full key's SHA-256 and direct mode's
// XXH3-128 of the same bytes, and what fstat said before the first read.
struct FileDigest {
    FileStat stat;
    // The file's stat moved while it was read: the bytes may be a mix of two
    // versions, and were written just now.
    bool changed = false;
    std::string sha256, xxh128;
    std::string text;  // the bytes, when asked for
};

// Opens the regular file at `path` (following links, as the compilers do)
// and digests it; `keep_text` also keeps its bytes. The error names the file
// and why.
std::expected<FileDigest, Error> digest_file(const std::filesystem::path& path,
                                             bool keep_text = false);
// The same for an open regular file, read from its current offset.
std::expected<FileDigest, Error> digest_fd(int fd, const std::filesystem::path& shown);

// Incremental SHA-256 for data that arrives in pieces.
class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(std::string_view bytes);
    // Hex digest of everything given so far; the object is spent afterwards.
    std::string final_hex();

  private:
    struct State;
    State* state_;
};

}  // namespace bekc
