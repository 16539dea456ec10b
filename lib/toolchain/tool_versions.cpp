#include "toolchain/tool_versions.hpp"

#include "store/json_memo.hpp"
#include "store/layout.hpp"

namespace bekc {

ToolFacts::ToolFacts(const fs::path& cache_root, Runner& runner)
    : cache_root_(cache_root), runner_(runner) {
    // Only string values are kept: the memo is written back, and a damaged
    // one (another value, deep nesting) must not travel along.
    memo_ = JsonMemo(cache_root_, CacheLayout::tool_memo()).read([](auto&, auto& value) {
        return value.is_string();
    });
}

ToolFacts::~ToolFacts() {
    if (changed_) JsonMemo(cache_root_, CacheLayout::tool_memo()).write(memo_, 1);
}

std::string ToolFacts::remembered(const std::string& name,
                                  const std::function<std::string()>& ask) {
    auto it = memo_.find(name);
    if (it != memo_.end()) return it->get<std::string>();
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
