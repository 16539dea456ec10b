#include "toolchain/tool_versions.hpp"

#include "store/cache.hpp"

namespace bekc {

ToolFacts::ToolFacts(const fs::path& cache_root, Runner& runner)
    : cache_root_(cache_root), runner_(runner) {
    // Only string values are kept: the memo is written back, and a damaged
    // one (another value, deep nesting) must not travel along.
    if (auto text = Cache(cache_root_).read_memo(CacheLayout::tool_memo())) {
        auto read = nlohmann::json::parse(*text, nullptr, false);
        if (read.is_object())
            for (const auto& [identity, value] : read.items())
                if (value.is_string()) memo_[identity] = value.get<std::string>();
    }
}

ToolFacts::~ToolFacts() {
    if (changed_) Cache(cache_root_).write_memo(CacheLayout::tool_memo(), memo_.dump(1));
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
