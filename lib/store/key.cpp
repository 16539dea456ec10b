#include "store/key.hpp"

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

std::string KeyBuilder::digest() const {
    return sha256_hex(record_);
}

}  // namespace bekc
