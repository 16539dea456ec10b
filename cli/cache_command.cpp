#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "driver/build.hpp"
#include "store/cache.hpp"
#include "store/size.hpp"
#include "util/error.hpp"

namespace bekc::cli {

namespace {

struct CacheOptions {
    std::optional<std::string> cache_dir;
    std::optional<std::string> name;
    std::string max_size;
};

std::string format_time(std::chrono::system_clock::time_point t) {
    std::time_t tt = std::chrono::system_clock::to_time_t(t);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&tt));
    return buf;
}

int list(Cache& cache) {
    auto entries = cache.list();
    if (entries.empty()) std::printf("(empty) %s\n", cache.path().c_str());
    for (const auto& e : entries)
        std::printf("%-24s %s  %8s  %3zu targets  %s%s\n", e.name.c_str(),
                    e.key.substr(0, 16).c_str(), format_size(e.bytes).c_str(), e.targets,
                    format_time(e.last_use).c_str(),
                    e.problem.empty() ? "" : ("  PROBLEM: " + e.problem).c_str());
    CacheStats s = cache.stats();
    std::printf("%zu entries, %s\n", s.entries, format_size(s.bytes).c_str());
    return kExitOk;
}

int verify(Cache& cache) {
    VerifyReport r = cache.verify();
    for (const auto& [key, why] : r.removed)
        std::printf("removed %s: %s\n", key.c_str(), why.c_str());
    std::printf("%zu entries checked, %zu removed, %zu stale temporary directories removed\n",
                r.checked, r.removed.size(), r.stale_temps_removed);
    return r.removed.empty() ? kExitOk : kExitCache;
}

int prune(Cache& cache, const std::string& max_size) {
    auto bytes = parse_size(max_size);
    if (!bytes) throw FatalError("bekc: error: --max-size " + bytes.error(), kExitUsage);
    PruneReport r = cache.prune(*bytes);
    std::printf("removed %zu entries and %zu records; %s -> %s\n", r.entries_removed,
                r.records_removed, format_size(r.bytes_before).c_str(),
                format_size(r.bytes_after).c_str());
    return kExitOk;
}

}  // namespace

Action add_cache_command(CLI::App& app) {
    auto o = std::make_shared<CacheOptions>();
    CLI::App* cmd = app.add_subcommand("cache", "Look at and maintain the build cache");
    cmd->require_subcommand(1);
    cmd->add_option("--cache-dir", o->cache_dir,
                    "Cache directory (default: $BEKC_CACHE_DIR, $XDG_CACHE_HOME/bekc or "
                    "~/.cache/bekc)");
    auto* path = cmd->add_subcommand("path", "Print the cache directory");
    auto* ls = cmd->add_subcommand("ls", "List entries, most recently used first");
    auto* clear = cmd->add_subcommand("clear", "Remove every entry, or those of module NAME");
    clear->add_option("name", o->name, "Module name (--name of the build)");
    auto* pr = cmd->add_subcommand("prune", "Remove least recently used entries down to a size");
    pr->add_option("--max-size", o->max_size, "Size to keep, e.g. 500M, 2G")->required();
    auto* ver = cmd->add_subcommand("verify", "Check every library's SHA-256; remove bad entries");
    // `bekc cache ls --cache-dir D` as well as `bekc cache --cache-dir D ls`.
    for (auto* sub : {path, ls, clear, pr, ver}) sub->fallthrough();
    return [=] {
        Cache cache(resolve_cache_root(o->cache_dir));
        if (path->parsed()) {
            std::printf("%s\n", cache.path().c_str());
            return static_cast<int>(kExitOk);
        }
        if (ls->parsed()) return list(cache);
        if (clear->parsed()) {
            size_t n = cache.clear(o->name);
            std::printf("removed %zu entries\n", n);
            return static_cast<int>(kExitOk);
        }
        if (pr->parsed()) return prune(cache, o->max_size);
        if (ver->parsed()) return verify(cache);
        return static_cast<int>(kExitUsage);
    };
}

}  // namespace bekc::cli
