// Byte sizes as users write them on the command line (`prune --max-size`).
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace bekc {

// "500M", "2G", "1.5GiB", "100KB", "4096". Decimal units (K, M, G, T, with or
// without B) are powers of 1000 as in ccache and disk labels; binary units
// (KiB, MiB, GiB, TiB, or Ki, Mi, ...) are powers of 1024. Letters are case
// insensitive; a bare number is bytes. The error says what is accepted.
std::expected<uint64_t, Error> parse_size(std::string_view text);

// "0 B", "812 B", "12.3 kB", "4.0 GB": decimal units, for `cache ls` and stats.
std::string format_size(uint64_t bytes);

}  // namespace bekc
