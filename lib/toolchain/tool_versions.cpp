#include "toolchain/tool_versions.hpp"

#include "store/json_memo.hpp"
#include "store/layout.hpp"

namespace bekc {

namespace {

// Only string values are kept: the memo is written back, and a damaged one
// (another value, deep nesting) must not travel along.
nlohmann::json read_tool_memo(const fs::path& cache_root) {
    return JsonMemo(cache_root, CacheLayout::tool_memo()).read([](auto&, auto& value) {
        return value.is_string();
    });
}

}  // namespace

ToolFacts::ToolFacts(const fs::path& cache_root, Runner& runner, std::vector<fs::path> read_only)
    : cache_root_(cache_root), runner_(runner), read_only_(std::move(read_only)) {
    memo_ = read_tool_memo(cache_root_);
}

std::optional<std::string> ToolFacts::from_read_only(const std::string& name) {
    for (size_t i = 0; i < read_only_.size(); ++i) {
        if (i == read_only_memos_.size()) read_only_memos_.push_back(read_tool_memo(read_only_[i]));
        auto it = read_only_memos_[i].find(name);
        if (it != read_only_memos_[i].end()) return it->get<std::string>();
    }
    return std::nullopt;
}

ToolFacts::~ToolFacts() {
    if (changed_) JsonMemo(cache_root_, CacheLayout::tool_memo()).write(memo_, 1);
}

std::string ToolFacts::remembered(const std::string& name,
                                  const std::function<std::string()>& ask) {
    auto it = memo_.find(name);
    if (it != memo_.end()) return it->get<std::string>();
    if (auto known = from_read_only(name)) return *known;
    std::string value = ask();
    memo_[name] = value;
    changed_ = true;
    return value;
}

std::string ToolFacts::version(const Tool& tool) {
    return remembered(tool.identity(), [&] { return tool_version(tool, runner_); });
}

std::string ToolFacts::multiarch(const Tool& cxx) {
    return remembered(cxx.identity() + "|multiarch", [&] { return tool_multiarch(cxx, runner_); });
}

}  // namespace bekc
