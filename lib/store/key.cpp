#include "store/key.hpp"

#include <optional>

#include <fmt/format.h>

#include "store/hash.hpp"

namespace bekc {

KeyBuilder::KeyBuilder(std::string_view kind) {
    add("format", kKeyFormatVersion);
    add("kind", kind);
}

KeyBuilder& KeyBuilder::add(std::string_view label, std::string_view value) {
    fmt::format_to(std::back_inserter(record_), "{}:{} {}:{}\n", label.size(), label, value.size(),
                   value);
    return *this;
}

KeyBuilder& KeyBuilder::add(std::string_view label, int64_t value) {
    return add(label, std::string_view(std::to_string(value)));
}

KeyBuilder& KeyBuilder::add_list(std::string_view label, const std::vector<std::string>& items) {
    add(label, static_cast<int64_t>(items.size()));
    for (size_t i = 0; i < items.size(); ++i) add(fmt::format("{}[{}]", label, i), items[i]);
    return *this;
}

std::vector<std::pair<std::string, std::string>> KeyBuilder::parts(std::string_view record) {
    std::vector<std::pair<std::string, std::string>> out;
    // "LEN:TEXT LEN:TEXT\n" per part; the lengths make any text unambiguous.
    auto field = [&](char end) -> std::optional<std::string> {
        size_t colon = record.find(':');
        if (colon == std::string_view::npos || colon == 0 || colon > 19) return std::nullopt;
        size_t n = 0;
        for (char c : record.substr(0, colon)) {
            if (c < '0' || c > '9') return std::nullopt;
            n = n * 10 + static_cast<size_t>(c - '0');
        }
        if (record.size() < colon + 1 + n + 1 || record[colon + 1 + n] != end) return std::nullopt;
        std::string text(record.substr(colon + 1, n));
        record.remove_prefix(colon + 1 + n + 1);
        return text;
    };
    while (!record.empty()) {
        auto label = field(' ');
        if (!label) break;
        auto value = field('\n');
        if (!value) break;
        out.emplace_back(std::move(*label), std::move(*value));
    }
    return out;
}

std::string KeyBuilder::digest() const {
    return sha256_hex(record_);
}

}  // namespace bekc
