// Cache keys as a readable record. Every field is written as
//
//     <label length>:<label> <value length>:<value>\n
//
// so field boundaries never depend on the contents: `-I -O2` and `-I-O2`
// produce different records. The first two fields are the record format
// version and the kind of key ("build", "direct", ...), so changing what goes
// into a key, or reusing labels across kinds, can never collide with an old
// key. explain() returns the record byte for byte as it is hashed, which is
// what `bekc build --explain-key` prints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bekc {

// Bump when the record layout or the meaning of any field changes.
inline constexpr int kKeyFormatVersion = 1;

class KeyBuilder {
  public:
    explicit KeyBuilder(std::string_view kind);

    KeyBuilder& add(std::string_view label, std::string_view value);
    KeyBuilder& add(std::string_view label, int64_t value);
    // A list: its length under `label`, then each item under `label[i]`, so
    // ["a b"] and ["a", "b"] differ.
    KeyBuilder& add_list(std::string_view label, const std::vector<std::string>& items);

    // SHA-256 of the record, 64 lowercase hex digits.
    std::string digest() const;
    // The record exactly as hashed.
    const std::string& explain() const { return record_; }

    // The (label, value) parts of a record explain() gave, in order; a
    // malformed record yields the parts before the damage.
    static std::vector<std::pair<std::string, std::string>> parts(std::string_view record);

  private:
    std::string record_;
};

}  // namespace bekc
