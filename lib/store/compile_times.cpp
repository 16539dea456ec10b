#include "store/compile_times.hpp"

#include <algorithm>

#include "store/json_memo.hpp"
#include "store/layout.hpp"

namespace bekc {

CompileTimes::CompileTimes(const fs::path& cache_root) : cache_root_(cache_root) {
    // Only well-formed entries travel along when the memo is written back.
    auto read = JsonMemo(cache_root_, CacheLayout::timing_memo()).read([](auto&, auto& v) {
        return v.is_object() && v.contains("s") && v["s"].is_number() && v.contains("n") &&
               v["n"].is_number_integer();
    });
    for (const auto& [what, v] : read.items()) {
        memo_[what] = {{"s", v["s"].get<double>()}, {"n", v["n"].get<int64_t>()}};
        next_ = std::max(next_, v["n"].get<int64_t>() + 1);
    }
}

std::optional<double> CompileTimes::seconds(const std::string& what) const {
    auto it = memo_.find(what);
    if (it == memo_.end()) return std::nullopt;
    return (*it)["s"].get<double>();
}

void CompileTimes::record(const std::string& what, double seconds) {
    memo_[what] = {{"s", seconds}, {"n", next_++}};
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
