#include "store/build_history.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "store/key.hpp"
#include "store/layout.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// A history file holds one record of a few kilobytes.
constexpr uint64_t kMaxHistoryBytes = uint64_t{1} << 20;

// Labels repeat (one "input.sha256" per input, "step.argv[0]" per step), so
// a part is its label and which occurrence of it.
using PartId = std::pair<std::string, size_t>;

std::vector<std::pair<PartId, std::string>> numbered_parts(std::string_view record) {
    std::vector<std::pair<PartId, std::string>> out;
    std::map<std::string, size_t> seen;
    for (auto& [label, value] : KeyBuilder::parts(record)) {
        size_t n = ++seen[label];
        out.push_back({{std::move(label), n}, std::move(value)});
    }
    return out;
}

std::string window(std::string_view s, size_t from, size_t width) {
    if (s.size() <= width) return std::string(s);
    size_t start = std::min(from > width / 4 ? from - width / 4 : 0, s.size() - width);
    return (start > 0 ? "..." : "") + std::string(s.substr(start, width)) +
           (start + width < s.size() ? "..." : "");
}

KeyChange change(const PartId& id, std::string_view before, std::string_view now, size_t width) {
    size_t first = static_cast<size_t>(
        std::mismatch(before.begin(), before.end(), now.begin(), now.end()).first - before.begin());
    std::string part = id.second > 1 ? id.first + "#" + std::to_string(id.second) : id.first;
    return {std::move(part), window(before, first, width), window(now, first, width)};
}

std::optional<nlohmann::json> read_history(const CacheDir& cache, const fs::path& rel) {
    auto text = cache.read(rel, kMaxHistoryBytes);
    if (!text) return std::nullopt;
    auto j = parse_json(*text).value_or(nullptr);
    auto it = j.is_object() ? j.find("record") : j.end();
    if (!j.is_object() || it == j.end() || !it->is_string()) return std::nullopt;
    return j;
}

}  // namespace

std::string inputs_id(std::string_view module, const std::vector<std::string>& inputs) {
    return KeyBuilder("history").add("module", module).add_list("inputs", inputs).digest();
}

std::vector<KeyChange> changed_parts(std::string_view before, std::string_view now, size_t width) {
    auto old_parts = numbered_parts(before);
    std::map<PartId, std::string> old_by_id;
    for (auto& [id, value] : old_parts) old_by_id.emplace(id, value);
    std::vector<KeyChange> out;
    for (const auto& [id, value] : numbered_parts(now)) {
        auto it = old_by_id.find(id);
        if (it == old_by_id.end()) {
            out.push_back(change(id, "", value, width));
            continue;
        }
        if (it->second != value) out.push_back(change(id, it->second, value, width));
        old_by_id.erase(it);
    }
    for (const auto& [id, value] : old_parts)
        if (old_by_id.contains(id)) out.push_back(change(id, value, "", width));
    return out;
}

std::optional<std::string> previous_record(const CacheDir& cache, std::string_view id) {
    auto j = read_history(cache, CacheLayout::history_record(id));
    if (!j) return std::nullopt;
    return (*j)["record"].get<std::string>();
}

void remember_record(const CacheDir& cache, std::string_view id, std::string_view record,
                     const std::optional<std::string>& previous) {
    // Unchanged: touched, so that prune sees it used, like a hit's entry.
    if (previous == record) return cache.touch(CacheLayout::history_record(id));
    (void)cache.write(CacheLayout::history_record(id),
                      dump_json(nlohmann::json{{"record", record}}) + "\n");
}

bool history_file_is_valid(const CacheDir& cache, const fs::path& rel) {
    return read_history(cache, rel).has_value();
}

}  // namespace bekc
