// Little-endian integers read out of a byte string that may be hostile: every
// read says whether it fell inside the bytes, so a parser of a binary format
// (ELF, CUDA fat binaries) cannot over-read whatever its input claims.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace bekc {

// Whether [offset, offset + length) lies within `size` bytes, without overflow.
constexpr bool span_fits(uint64_t offset, uint64_t length, uint64_t size) {
    return offset <= size && length <= size - offset;
}

// The `width`-byte (1 to 8) little-endian unsigned integer at `offset`, or
// nullopt when it does not lie wholly inside `bytes`.
inline std::optional<uint64_t> read_le(std::string_view bytes, uint64_t offset, unsigned width) {
    if (width == 0 || width > 8 || !span_fits(offset, width, bytes.size())) return std::nullopt;
    uint64_t value = 0;
    for (unsigned i = width; i-- > 0;)
        value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
    return value;
}

}  // namespace bekc
