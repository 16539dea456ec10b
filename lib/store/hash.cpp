#include "store/hash.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <xxhash.h>

// The low-level SHA-256 functions, deprecated in OpenSSL 3 in favour of EVP,
// compute the same digest without EVP's one-time provider and configuration
// start-up, which cost more than the rest of a cache hit together.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace {

std::string to_hex(const unsigned char* bytes, size_t n) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(n * 2, '0');
    for (size_t i = 0; i < n; ++i) {
        out[2 * i] = kDigits[bytes[i] >> 4];
        out[2 * i + 1] = kDigits[bytes[i] & 0xf];
    }
    return out;
}

std::string xxh_to_hex(XXH128_hash_t h) {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, h);
    return to_hex(canonical.digest, sizeof canonical.digest);
}

// Small enough to stay in the core's cache between the kernel's copy and the
// hashing: reading a file in 1 MiB pieces ran at a tenth of the speed.
constexpr size_t kChunk = 128 << 10;

// One buffer per thread for every file streamed: allocated once, never
// cleared (what is read overwrites it).
char* chunk_buffer() {
    thread_local std::unique_ptr<char[]> buf = std::make_unique_for_overwrite<char[]>(kChunk);
    return buf.get();
}

// Feeds the descriptor's content to `sink` in kChunk pieces. With `size`,
// stops once that many bytes have come (the caller's fstat tells whether the
// file grew meanwhile); otherwise at the end of the file.
std::expected<void, Error> stream_fd(int fd, const std::filesystem::path& shown,
                                     const std::function<void(std::string_view)>& sink,
                                     std::optional<uint64_t> size = std::nullopt) {
    char* buf = chunk_buffer();
    uint64_t total = 0;
    while (!size || total < *size) {
        ssize_t n = read(fd, buf, kChunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(ErrorKind::Cache, errno_message("read", shown, errno));
        if (n == 0) break;
        total += static_cast<uint64_t>(n);
        sink(std::string_view(buf, static_cast<size_t>(n)));
    }
    return {};
}

using XxhState = std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)>;

XxhState new_xxh_state() {
    XxhState state(XXH3_createState(), &XXH3_freeState);
    XXH3_128bits_reset(state.get());
    return state;
}

std::expected<FileDigest, Error> digest_open(int fd, const struct stat& st,
                                             const std::filesystem::path& shown, bool keep_text) {
    FileDigest d;
    d.stat = file_stat_of(st);
    Sha256 sha;
    XxhState xxh = new_xxh_state();
    if (keep_text) d.text.reserve(static_cast<size_t>(st.st_size));
    // A regular file's size is known: no read is spent finding its end.
    std::optional<uint64_t> size;
    if (st.st_size > 0) size = static_cast<uint64_t>(st.st_size);
    auto done = stream_fd(
        fd, shown,
        [&](std::string_view piece) {
            sha.update(piece);
            XXH3_128bits_update(xxh.get(), piece.data(), piece.size());
            if (keep_text) d.text.append(piece);
        },
        size);
    if (!done) return std::unexpected(done.error());
    struct stat after;
    d.changed = ::fstat(fd, &after) != 0 || file_stat_of(after) != d.stat;
    d.sha256 = sha.final_hex();
    d.xxh128 = xxh_to_hex(XXH3_128bits_digest(xxh.get()));
    return d;
}

template <typename F>
auto with_file(const std::filesystem::path& path, F&& f) -> decltype(f(0)) {
    auto fd = open_regular_at(AT_FDCWD, path, path, ReadOptions{UINT64_MAX, true});
    if (!fd) return std::unexpected(fd.error());
    return f(fd->get());
}

}  // namespace

struct Sha256::State {
    SHA256_CTX ctx;
};

Sha256::Sha256() : state_(new State) {
    if (SHA256_Init(&state_->ctx) != 1) {
        delete state_;
        throw InternalError("OpenSSL could not initialise SHA-256");
    }
}

Sha256::~Sha256() {
    delete state_;
}

void Sha256::update(std::string_view bytes) {
    SHA256_Update(&state_->ctx, bytes.data(), bytes.size());
}

std::string Sha256::final_hex() {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256_Final(md, &state_->ctx);
    return to_hex(md, sizeof md);
}

std::string sha256_hex(std::string_view bytes) {
    Sha256 h;
    h.update(bytes);
    return h.final_hex();
}

std::expected<std::string, Error> sha256_fd(int fd, const std::filesystem::path& shown) {
    Sha256 h;
    auto done = stream_fd(fd, shown, [&](std::string_view piece) { h.update(piece); });
    if (!done) return std::unexpected(done.error());
    return h.final_hex();
}

std::expected<std::string, Error> sha256_file(const std::filesystem::path& path) {
    return with_file(path, [&](int fd) { return sha256_fd(fd, path); });
}

std::string xxh128_hex(std::string_view bytes) {
    return xxh_to_hex(XXH3_128bits(bytes.data(), bytes.size()));
}

uint64_t xxh3_64(std::string_view bytes) {
    return XXH3_64bits(bytes.data(), bytes.size());
}

std::expected<std::string, Error> xxh128_file(const std::filesystem::path& path) {
    return with_file(path, [&](int fd) { return xxh128_fd(fd, path); });
}

std::expected<std::string, Error> xxh128_fd(int fd, const std::filesystem::path& shown) {
    XxhState state = new_xxh_state();
    auto done = stream_fd(fd, shown, [&](std::string_view piece) {
        XXH3_128bits_update(state.get(), piece.data(), piece.size());
    });
    if (!done) return std::unexpected(done.error());
    return xxh_to_hex(XXH3_128bits_digest(state.get()));
}

std::expected<FileDigest, Error> digest_file(const std::filesystem::path& path, bool keep_text) {
    auto file = open_regular_file_at(AT_FDCWD, path, path, ReadOptions{UINT64_MAX, true});
    if (!file) return std::unexpected(file.error());
    return digest_open(file->fd.get(), file->st, path, keep_text);
}

std::expected<FileDigest, Error> digest_fd(int fd, const std::filesystem::path& shown) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return fail(ErrorKind::Cache, errno_message("read", shown, errno));
    return digest_open(fd, st, shown, false);
}

}  // namespace bekc
