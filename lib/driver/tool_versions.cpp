#include "driver/tool_versions.hpp"

#include <nlohmann/json.hpp>

#include "store/cache.hpp"

namespace bekc {

std::string remembered_tool_version(const Tool& tool, const fs::path& cache_root) {
    Cache cache(cache_root);
    // Only string values are kept: the memo is written back, and a damaged
    // one (another value, deep nesting) must not travel along.
    nlohmann::json j = nlohmann::json::object();
    if (auto text = cache.read_memo(CacheLayout::tool_memo())) {
        auto read = nlohmann::json::parse(*text, nullptr, false);
        if (read.is_object())
            for (const auto& [identity, value] : read.items())
                if (value.is_string()) j[identity] = value.get<std::string>();
        auto it = j.find(tool.identity());
        if (it != j.end()) return it->get<std::string>();
    }
    std::string version = tool_version(tool);
    j[tool.identity()] = version;
    // A read-only cache only means asking again next time.
    cache.write_memo(CacheLayout::tool_memo(), j.dump(1));
    return version;
}

}  // namespace bekc
