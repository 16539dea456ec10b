#include "driver/tool_versions.hpp"

#include <nlohmann/json.hpp>

namespace bekc {

std::string remembered_tool_version(const Tool& tool, const fs::path& cache_root) {
    fs::path memo = cache_root / "tools.json";
    nlohmann::json j = nlohmann::json::object();
    if (auto text = read_file(memo)) {
        j = nlohmann::json::parse(*text, nullptr, false);
        if (!j.is_object()) j = nlohmann::json::object();
        auto it = j.find(tool.identity());
        if (it != j.end() && it->is_string()) return it->get<std::string>();
    }
    std::string version = tool_version(tool);
    j[tool.identity()] = version;
    std::error_code ec;
    fs::create_directories(cache_root, ec);
    try {
        write_file_atomic(memo, j.dump(1));
    } catch (...) {
        // A read-only cache only means asking again next time.
    }
    return version;
}

}  // namespace bekc
