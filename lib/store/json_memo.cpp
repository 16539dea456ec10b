#include "store/json_memo.hpp"

#include <utility>

#include "store/cache.hpp"
#include "util/json_text.hpp"

namespace bekc {

JsonMemo::JsonMemo(fs::path cache_root, fs::path name)
    : cache_root_(std::move(cache_root)), name_(std::move(name)) {}

nlohmann::json JsonMemo::read(const Keep& keep) const {
    nlohmann::json out = nlohmann::json::object();
    auto text = Cache(cache_root_).read_memo(name_);
    if (!text) return out;
    auto memo = parse_json(*text).value_or(nullptr);
    if (!memo.is_object()) return out;
    for (auto& [key, value] : memo.items())
        if (keep(key, value)) out[key] = std::move(value);
    return out;
}

void JsonMemo::write(const nlohmann::json& memo, int indent) const noexcept {
    // Best effort, and ToolFacts writes from its destructor: nothing may
    // escape, not even running out of memory.
    try {
        Cache(cache_root_).write_memo(name_, dump_json(memo, indent));
    } catch (const std::exception&) {
    }
}

}  // namespace bekc
