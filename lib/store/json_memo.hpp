// A small JSON file at the cache root that remembers answers between builds
// (CacheLayout::tool_memo(), gpu_memo(), timing_memo()): read once, each
// entry checked, written back whole. Losing one only costs asking again, so
// reading never fails and writing is best effort.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "util/fs.hpp"

namespace bekc {

class JsonMemo {
  public:
    // Whether an entry (a key of the memo's object and its value) is well
    // formed; the others are dropped.
    using Keep = std::function<bool(const std::string& key, const nlohmann::json& value)>;

    JsonMemo(fs::path cache_root, fs::path name);

    // The memo's entries that `keep` accepts, as a JSON object. A missing or
    // unreadable file, or one that is not a JSON object, reads as an empty
    // object. Dropped entries never travel along when the memo is written
    // back.
    nlohmann::json read(const Keep& keep) const;

    // Replaces the file with `memo` (an object) in one rename: a reader sees
    // the old file or the new one whole, and of two writers one wins whole.
    // A read-only cache keeps its old memo. Keys and values are any bytes
    // (input and compiler paths need not be UTF-8: util/json_text.hpp).
    // Never throws, so that a destructor may write.
    void write(const nlohmann::json& memo, int indent = -1) const noexcept;

  private:
    fs::path cache_root_, name_;
};

}  // namespace bekc
