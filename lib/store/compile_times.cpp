#include "store/compile_times.hpp"

#include <algorithm>

#include "store/json_memo.hpp"
#include "store/layout.hpp"
#include "util/text.hpp"

namespace bekc {

CompileTimes::CompileTimes(const fs::path& cache_root) : cache_root_(cache_root) {
    // Only well-formed entries travel along when the memo is written back.
    auto read = JsonMemo(cache_root_, CacheLayout::timing_memo()).read([](auto&, auto& v) {
        return v.is_object() && v.contains("s") && v["s"].is_number() && v.contains("n") &&
               v["n"].is_number_integer();
    });
    for (const auto& [what, v] : read.items()) {
        memo_[what] = {{"s", v["s"].get<double>()}, {"n", v["n"].get<int64_t>()}};
        if (auto m = v.find("m"); m != v.end() && m->is_string() && is_module_id(*m))
            memo_[what]["m"] = *m;
        next_ = std::max(next_, v["n"].get<int64_t>() + 1);
    }
}

bool CompileTimes::is_module_id(const std::string& id) {
    return !id.empty() && id.size() <= 512 &&
           std::all_of(id.begin(), id.end(), is_c_identifier_char);
}

std::optional<std::string> CompileTimes::module_id(const std::string& what) const {
    auto it = memo_.find(what);
    if (it == memo_.end() || !it->contains("m")) return std::nullopt;
    return (*it)["m"].get<std::string>();
}

void CompileTimes::record_module_id(const std::string& what, const std::string& id) {
    if (!is_module_id(id) || !memo_.contains(what)) return;
    if (memo_[what].value("m", "") == id) return;
    memo_[what]["m"] = id;
    changed_ = true;
}

std::optional<double> CompileTimes::seconds(const std::string& what) const {
    auto it = memo_.find(what);
    if (it == memo_.end()) return std::nullopt;
    return (*it)["s"].get<double>();
}

void CompileTimes::record(const std::string& what, double seconds) {
    nlohmann::json entry = {{"s", seconds}, {"n", next_++}};
    if (auto id = module_id(what)) entry["m"] = *id;
    memo_[what] = std::move(entry);
    changed_ = true;
}

void CompileTimes::save() const {
    if (!changed_) return;
    nlohmann::json out = memo_;
    if (out.size() > kMaxEntries) {
        std::vector<std::pair<int64_t, std::string>> order;
        for (const auto& [what, v] : out.items()) order.emplace_back(v["n"].get<int64_t>(), what);
        std::sort(order.begin(), order.end());
        for (size_t i = 0; i + kMaxEntries < order.size(); ++i) out.erase(order[i].second);
    }
    JsonMemo(cache_root_, CacheLayout::timing_memo()).write(out);
}

}  // namespace bekc
