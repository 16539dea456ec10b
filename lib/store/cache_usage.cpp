#include "store/cache_usage.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "store/layout.hpp"

namespace bekc {

namespace {

struct PartRule {
    std::string_view what;
    std::string_view fate;
    RemovedBy removed_by;
    // The root's names of this part; a name ending in '*' is a prefix.
    std::array<std::string_view, 4> names;
};

// The root's names (store/layout.hpp), by part.
constexpr std::array<PartRule, 10> kParts{{
    {"entries",
     "prune removes them, least recently used first; one in use stays",
     RemovedBy::Prune,
     {"entries"}},
    {"records",
     "prune removes them with the entries",
     RemovedBy::Prune,
     {"direct", "portable", "history"}},
    {"step results", "prune removes them, least recently used first", RemovedBy::Prune, {"steps"}},
    {"runtime headers and objects",
     "bekc cache clear removes them; the next build writes them again",
     RemovedBy::Clear,
     {"runtime"}},
    {"memos",
     "bekc cache clear removes them; builds write them again",
     RemovedBy::Clear,
     {"tools.json", "gpus.json", "timings.json", "size.json"}},
    {"statistics",
     "kept; bekc cache stats --zero resets the counters",
     RemovedBy::Kept,
     {"stats.*"}},
    {"marker",
     "kept: it makes the directory a bekc cache",
     RemovedBy::Kept,
     {"bekc-cache.json", "CACHEDIR.TAG"}},
    {"configuration", "kept: it is yours", RemovedBy::Kept, {"bekc.conf"}},
    {"inline sources", "kept; bekc.clear_cache() in Python removes them", RemovedBy::Kept, {"src"}},
    {"locks and temporaries",
     "kept: the locks of the runtime trees and of the size count, and what running builds use",
     RemovedBy::Kept,
     {"locks", "tmp"}},
}};

bool matches(std::string_view pattern, std::string_view name) {
    if (pattern.empty()) return false;
    if (pattern.back() == '*') return name.starts_with(pattern.substr(0, pattern.size() - 1));
    return name == pattern;
}

// The rule whose names include `name`, or null.
const PartRule* rule_of(std::string_view name) {
    for (const PartRule& rule : kParts)
        for (std::string_view pattern : rule.names)
            if (matches(pattern, name)) return &rule;
    return nullptr;
}

void add(std::vector<UsagePart>& parts, const PartRule* rule, const CacheDir::Item& item,
         uint64_t bytes) {
    std::string what = rule ? std::string(rule->what) : "other files";
    std::string name = item.name + (item.is_dir ? "/" : "");
    for (UsagePart& part : parts)
        if (part.what == what) {
            part.names += ", " + name;
            part.bytes += bytes;
            return;
        }
    parts.push_back(
        {what, name,
         rule ? std::string(rule->fate) : "kept: bekc never removes what is not its own",
         rule ? rule->removed_by : RemovedBy::Kept, bytes});
}

}  // namespace

std::vector<UsagePart> cache_usage(const CacheDir& dir) {
    std::vector<UsagePart> found;
    auto items = dir.list("");
    if (!items) return found;
    for (const auto& item : *items) {
        if (item.is_symlink) continue;
        uint64_t bytes = dir.tree_bytes(item.name);
        if (bytes > 0) add(found, rule_of(item.name), item, bytes);
    }
    // In the table's order, whatever order the directory listed.
    auto rank = [](const UsagePart& part) {
        size_t i = 0;
        while (i < kParts.size() && kParts[i].what != part.what) ++i;
        return i;
    };
    std::stable_sort(found.begin(), found.end(),
                     [&](const UsagePart& a, const UsagePart& b) { return rank(a) < rank(b); });
    return found;
}

}  // namespace bekc
