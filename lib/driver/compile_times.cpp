#include "driver/compile_times.hpp"

#include <algorithm>
#include <numeric>

#include "store/cache.hpp"

namespace bekc {

CompileTimes::CompileTimes(const fs::path& cache_root) : cache_root_(cache_root) {
    auto text = Cache(cache_root_).read_memo(CacheLayout::timing_memo());
    if (!text) return;
    auto read = nlohmann::json::parse(*text, nullptr, false);
    if (!read.is_object()) return;
    // Only well-formed entries travel along when the memo is written back.
    for (const auto& [what, v] : read.items()) {
        if (!v.is_object() || !v.contains("s") || !v["s"].is_number() || !v.contains("n") ||
            !v["n"].is_number_integer())
            continue;
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
    Cache(cache_root_).write_memo(CacheLayout::timing_memo(), out.dump());
}

std::vector<size_t> longest_first(size_t count,
                                  const std::function<std::optional<double>(size_t)>& seconds) {
    std::vector<size_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::vector<std::optional<double>> s(count);
    for (size_t i = 0; i < count; ++i) s[i] = seconds(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (!s[a] || !s[b]) return !s[a] && s[b];
        return *s[a] > *s[b];
    });
    return order;
}

}  // namespace bekc
