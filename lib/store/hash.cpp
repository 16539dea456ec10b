#include "store/hash.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

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

// Feeds the descriptor's content to `sink` in 1 MiB pieces.
std::expected<void, std::string> stream_fd(int fd, const std::filesystem::path& shown,
                                           const std::function<void(std::string_view)>& sink) {
    std::vector<char> buf(1 << 20);
    for (;;) {
        ssize_t n = read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::unexpected(errno_message("read", shown, errno));
        if (n == 0) break;
        sink(std::string_view(buf.data(), static_cast<size_t>(n)));
    }
    return {};
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
        throw FatalError("OpenSSL could not initialise SHA-256", kExitInternal);
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

std::expected<std::string, std::string> sha256_fd(int fd, const std::filesystem::path& shown) {
    Sha256 h;
    auto done = stream_fd(fd, shown, [&](std::string_view piece) { h.update(piece); });
    if (!done) return std::unexpected(done.error());
    return h.final_hex();
}

std::expected<std::string, std::string> sha256_file(const std::filesystem::path& path) {
    return with_file(path, [&](int fd) { return sha256_fd(fd, path); });
}

std::string xxh128_hex(std::string_view bytes) {
    return xxh_to_hex(XXH3_128bits(bytes.data(), bytes.size()));
}

std::expected<std::string, std::string> xxh128_file(const std::filesystem::path& path) {
    return with_file(path, [&](int fd) { return xxh128_fd(fd, path); });
}

std::expected<std::string, std::string> xxh128_fd(int fd, const std::filesystem::path& shown) {
    std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                   &XXH3_freeState);
    XXH3_128bits_reset(state.get());
    auto done = stream_fd(fd, shown, [&](std::string_view piece) {
        XXH3_128bits_update(state.get(), piece.data(), piece.size());
    });
    if (!done) return std::unexpected(done.error());
    return xxh_to_hex(XXH3_128bits_digest(state.get()));
}

}  // namespace bekc
