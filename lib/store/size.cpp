#include "store/size.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace bekc {

namespace {

// Suffix spellings, lowercased, and their multipliers.
constexpr std::array<std::pair<std::string_view, double>, 18> kUnits{{
    {"", 1},
    {"b", 1},
    {"k", 1e3},
    {"kb", 1e3},
    {"m", 1e6},
    {"mb", 1e6},
    {"g", 1e9},
    {"gb", 1e9},
    {"t", 1e12},
    {"tb", 1e12},
    {"ki", 0x1p10},
    {"kib", 0x1p10},
    {"mi", 0x1p20},
    {"mib", 0x1p20},
    {"gi", 0x1p30},
    {"gib", 0x1p30},
    {"ti", 0x1p40},
    {"tib", 0x1p40},
}};

std::optional<double> unit_multiplier(std::string suffix) {
    for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& [name, factor] : kUnits) {
        if (name == suffix) return factor;
    }
    return std::nullopt;
}

}  // namespace

std::expected<uint64_t, Error> parse_size(std::string_view text) {
    auto invalid = [&] {
        return fail(
            ErrorKind::Usage,
            fmt::format(
                "invalid size '{}': write a number with an optional unit, such as 500M, 2G, "
                "1.5GiB or 100KB",
                text));
    };
    std::string_view trimmed = text;
    while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
    while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
    double number = 0;
    auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), number,
                                     std::chars_format::fixed);
    if (ec != std::errc() || end == trimmed.data() || !std::isfinite(number) || number < 0) {
        return invalid();
    }
    std::string_view suffix(end, static_cast<size_t>(trimmed.data() + trimmed.size() - end));
    while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
    auto factor = unit_multiplier(std::string(suffix));
    if (!factor) return invalid();
    double bytes = std::round(number * *factor);
    if (bytes >= 18446744073709551615.0) return invalid();
    return static_cast<uint64_t>(bytes);
}

std::string format_size(uint64_t bytes) {
    static constexpr std::array<std::string_view, 5> kNames{"B", "kB", "MB", "GB", "TB"};
    double value = static_cast<double>(bytes);
    size_t unit = 0;
    while (value >= 1000 && unit + 1 < kNames.size()) {
        value /= 1000;
        ++unit;
    }
    if (unit == 0) return fmt::format("{} B", bytes);
    return fmt::format("{:.1f} {}", value, kNames[unit]);
}

}  // namespace bekc
