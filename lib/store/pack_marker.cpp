#include "store/pack_marker.hpp"

#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/cache_dir.hpp"
#include "store/layout.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// The string member `key` of `pack` into `out`, or why it is not one.
std::string take_string(const nlohmann::json& pack, const char* key, std::string& out) {
    auto it = pack.find(key);
    if (it == pack.end() || !it->is_string()) return fmt::format("\"{}\" is not a string", key);
    out = it->get<std::string>();
    return {};
}

std::string take_strings(const nlohmann::json& pack, const char* key,
                         std::vector<std::string>& out) {
    auto it = pack.find(key);
    if (it == pack.end() || !it->is_array())
        return fmt::format("\"{}\" is not an array of strings", key);
    for (const auto& item : *it) {
        if (!item.is_string()) return fmt::format("\"{}\" is not an array of strings", key);
        out.push_back(item.get<std::string>());
    }
    return {};
}

std::string fill_pack_info(const nlohmann::json& pack, PackInfo& info) {
    for (auto [key, out] :
         {std::pair{"name", &info.name}, std::pair{"version", &info.version},
          std::pair{"bekc_version", &info.bekc_version}, std::pair{"cuda", &info.cuda}})
        if (std::string why = take_string(pack, key, *out); !why.empty()) return why;
    for (auto [key, out] : {std::pair{"archs", &info.archs}, std::pair{"modules", &info.modules}})
        if (std::string why = take_strings(pack, key, *out); !why.empty()) return why;
    if (std::string why = pack_name_problem(info.name); !why.empty())
        return fmt::format("its name \"{}\" {}", info.name, why);
    return {};
}

}  // namespace

std::string pack_name_problem(const std::string& name) {
    if (name.empty()) return "is empty";
    if (name.front() == '.') return "starts with '.'";
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_'))
            return "may hold only letters, digits, '.' and '_'";
    return {};
}

std::expected<std::optional<PackInfo>, Error> read_pack_info(const fs::path& root) {
    CacheDir dir(root, CacheAccess::ReadOnly);
    fs::path shown = root / kMarkerFile;
    auto text = dir.read(kMarkerFile, 1 << 20);
    if (!text) return std::unexpected(text.error());
    auto json = parse_json(*text);
    if (!json || !json->is_object())
        return fail(ErrorKind::Cache, fmt::format("{} is not a JSON object", shown.string()));
    auto pack = json->find("pack");
    if (pack == json->end()) return std::nullopt;
    PackInfo info;
    std::string why = pack->is_object() ? fill_pack_info(*pack, info) : "it is not an object";
    if (!why.empty())
        return fail(ErrorKind::Cache,
                    fmt::format("{}: the \"pack\" object is malformed: {}", shown.string(), why));
    return info;
}

}  // namespace bekc
