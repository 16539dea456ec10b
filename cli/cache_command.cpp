#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cache_packs.hpp"
#include "commands.hpp"
#include "driver/fatal.hpp"
#include "json_output.hpp"
#include "store/cache.hpp"
#include "store/cache_layers.hpp"
#include "store/cache_usage.hpp"
#include "store/layout.hpp"
#include "store/size.hpp"
#include "store/stats.hpp"
#include "util/error.hpp"
#include "util/utc_time.hpp"

namespace bekc::cli {

namespace {

using Json = nlohmann::ordered_json;

struct CacheOptions {
    std::optional<std::string> cache_dir;
    std::optional<std::string> name;
    std::string max_size;
    std::string new_max_size;
    bool zero = false;
    bool json = false;  // ls and stats
};

std::string format_time(std::chrono::system_clock::time_point t) {
    std::time_t tt = std::chrono::system_clock::to_time_t(t);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&tt));
    return buf;
}

// Maintenance failures (not a cache, permission denied, read-only, a held
// lock) exit 4 with the cause, its file and its notes; nothing is reported
// as removed that was not.
[[noreturn]] void maintenance_failed(Error error) {
    fatal(std::move(error.as(ErrorKind::Cache)));
}

template <typename T>
T or_fail(std::expected<T, Error> result) {
    if (!result) maintenance_failed(std::move(result.error()));
    return std::move(*result);
}

// "BEKC_CACHE_MAX_SIZE" may be the variable or max_size in a bekc.conf.
std::string limit_origin(const SizeLimit& limit, const Settings& settings) {
    if (limit.source != "BEKC_CACHE_MAX_SIZE") return limit.source;
    auto found = settings.find("BEKC_CACHE_MAX_SIZE");
    return found ? found->origin : limit.source;
}

std::string percent(uint64_t part, uint64_t whole) {
    return whole ? fmt::format(" ({:.2f} %)",
                               100.0 * static_cast<double>(part) / static_cast<double>(whole))
                 : "";
}

// The counters as `ccache -s` shows them.
void print_counters(const BuildCounters& c, uint64_t limit, uint64_t bytes) {
    uint64_t hits = c.local_hits + c.remote_hits, builds = hits + c.misses;
    if (c.zeroed_at) {
        std::printf("stats zeroed    %s\n",
                    format_time(std::chrono::system_clock::from_time_t(c.zeroed_at)).c_str());
    }
    std::printf("hits            %llu%s\n", static_cast<unsigned long long>(hits),
                percent(hits, builds).c_str());
    std::printf("  local         %llu\n", static_cast<unsigned long long>(c.local_hits));
    std::printf("  remote        %llu\n", static_cast<unsigned long long>(c.remote_hits));
    std::printf("misses          %llu%s\n", static_cast<unsigned long long>(c.misses),
                percent(c.misses, builds).c_str());
    std::printf("errors          %llu\n", static_cast<unsigned long long>(c.errors));
    if (c.remote_waits) {
        std::printf("waited for others %llu (another machine compiled the same miss)\n",
                    static_cast<unsigned long long>(c.remote_waits));
        std::printf("  served        %llu (compiles saved)\n",
                    static_cast<unsigned long long>(c.remote_waits_served));
        std::printf("  waited        %.1f s\n", static_cast<double>(c.wait_ms) / 1000);
        std::printf("  saved         %.1f s of compiling\n",
                    static_cast<double>(c.saved_ms) / 1000);
    }
    if (limit)
        std::printf("cache size      %s / %s%s\n", format_size(bytes).c_str(),
                    format_size(limit).c_str(), percent(bytes, limit).c_str());
}

// `cache ls --json` (docs/cli.md, "Scripting").
int list_json(Cache& cache) {
    auto entries = or_fail(cache.list());
    CacheStats s = or_fail(cache.stats());
    Json list = Json::array();
    for (const auto& e : entries)
        list.push_back({{"name", e.name},
                        {"key", e.key},
                        {"path", e.dir.string()},
                        {"bytes", e.bytes},
                        {"targets", e.targets},
                        {"last_use", utc_time(std::chrono::system_clock::to_time_t(e.last_use))},
                        {"problem", e.problem.empty() ? Json(nullptr) : Json(e.problem)}});
    print_json({{"cache", cache.path().string()},
                {"entries", list},
                {"entry_bytes", s.entry_bytes},
                {"total_bytes", s.bytes}});
    return kExitOk;
}

int list(Cache& cache) {
    auto entries = or_fail(cache.list());
    if (entries.empty()) std::printf("(empty) %s\n", cache.path().c_str());
    for (const auto& e : entries)
        std::printf("%-24s %s  %8s  %3zu %-7s  %s%s\n", e.name.c_str(), e.key.substr(0, 16).c_str(),
                    format_size(e.bytes).c_str(), e.targets, e.targets == 1 ? "target" : "targets",
                    format_time(e.last_use).c_str(),
                    e.problem.empty() ? "" : ("  PROBLEM: " + e.problem).c_str());
    CacheStats s = or_fail(cache.stats());
    std::printf("%zu %s (%s); %s in all under %s\n", s.entries,
                s.entries == 1 ? "entry" : "entries", format_size(s.entry_bytes).c_str(),
                format_size(s.bytes).c_str(), cache.path().c_str());
    return kExitOk;
}

// `cache stats --json` (docs/cli.md, "Scripting").
Json stats_json(const Cache& cache, const CacheStats& s, const SizeLimit& limit,
                const Settings& settings) {
    BuildCounters c = read_counters(cache.dir());
    Json counters = {{"hits", c.local_hits + c.remote_hits},
                     {"local_hits", c.local_hits},
                     {"remote_hits", c.remote_hits},
                     {"misses", c.misses},
                     {"errors", c.errors},
                     {"remote_waits", c.remote_waits},
                     {"remote_waits_served", c.remote_waits_served},
                     {"wait_seconds", static_cast<double>(c.wait_ms) / 1000},
                     {"saved_seconds", static_cast<double>(c.saved_ms) / 1000},
                     {"zeroed_at", c.zeroed_at ? Json(utc_time(c.zeroed_at)) : Json(nullptr)}};
    return {{"cache", cache.path().string()},
            {"counters", counters},
            {"entries", s.entries},
            {"direct_records", s.direct_records},
            {"entry_bytes", s.entry_bytes},
            {"total_bytes", s.bytes},
            {"max_size", {{"bytes", limit.bytes}, {"source", limit_origin(limit, settings)}}}};
}

int stats(Cache& cache, const Settings& settings, bool zero, bool json) {
    if (zero) {
        if (or_fail(cache.is_cache()))
            if (auto zeroed = zero_counters(cache.dir()); !zeroed)
                maintenance_failed(std::move(zeroed.error()));
        if (json)
            print_json({{"cache", cache.path().string()}, {"zeroed", true}});
        else
            std::printf("statistics zeroed\n");
        return kExitOk;
    }
    CacheStats s = or_fail(cache.stats());
    auto limit = or_fail(cache.size_limit(settings.lookup()));
    if (json) {
        print_json(stats_json(cache, s, limit, settings));
        return kExitOk;
    }
    print_counters(read_counters(cache.dir()), limit.bytes, s.bytes);
    std::printf("entries         %zu\n", s.entries);
    std::printf("direct records  %zu\n", s.direct_records);
    std::printf("entry bytes     %llu (%s)\n", static_cast<unsigned long long>(s.entry_bytes),
                format_size(s.entry_bytes).c_str());
    std::printf("total bytes     %llu (%s)\n", static_cast<unsigned long long>(s.bytes),
                format_size(s.bytes).c_str());
    std::printf("max size        %s (%s)\n",
                limit.bytes ? format_size(limit.bytes).c_str() : "no limit",
                limit_origin(limit, settings).c_str());
    return kExitOk;
}

int verify(Cache& cache) {
    VerifyReport r = or_fail(cache.verify());
    for (const auto& [what, why] : r.removed)
        std::printf("removed %s: %s\n", what.c_str(), why.c_str());
    std::printf(
        "%zu entries checked, %zu removed, %zu stale temporary directories removed (and %zu "
        "runtime trees, records and memos checked)\n",
        r.checked, r.removed.size(), r.stale_temps_removed, r.checked_other);
    return r.removed.empty() ? kExitOk : kExitCache;
}

// Prune stopped above `target`: what the bytes left are, what removes each
// part and what `cache clear` would leave.
void explain_remains(const Cache& cache, uint64_t target) {
    std::vector<UsagePart> parts = cache_usage(cache.dir());
    uint64_t total = 0, after_clear = 0;
    for (const auto& p : parts) {
        total += p.bytes;
        if (p.removed_by == RemovedBy::Kept) after_clear += p.bytes;
    }
    std::printf(
        "%s remain, more than %s: prune removes only entries, their records and step "
        "results\n",
        format_size(total).c_str(), format_size(target).c_str());
    for (const auto& p : parts)
        std::printf("  %-28s %9s  %s: %s\n", p.what.c_str(), format_size(p.bytes).c_str(),
                    p.names.c_str(), p.fate.c_str());
    std::printf("bekc cache clear would leave %s: the parts it keeps\n",
                format_size(after_clear).c_str());
}

int prune(Cache& cache, const std::string& max_size, const Settings& settings) {
    uint64_t bytes = 0;
    if (max_size.empty()) {
        bytes = or_fail(cache.size_limit(settings.lookup())).bytes;
    } else {
        auto parsed = parse_size(max_size);
        if (!parsed) fatal(Error::make(ErrorKind::Usage, "--max-size " + parsed.error().message));
        bytes = *parsed;
    }
    PruneReport r = or_fail(cache.prune(bytes));
    std::printf("removed %zu entries and %zu records", r.entries_removed, r.records_removed);
    if (r.steps_removed) std::printf(" and %zu step results", r.steps_removed);
    std::printf("; %s -> %s\n", format_size(r.bytes_before).c_str(),
                format_size(r.bytes_after).c_str());
    if (r.bytes_after > bytes) explain_remains(cache, bytes);
    return kExitOk;
}

int max_size(Cache& cache, const std::string& value, const Settings& settings) {
    if (!value.empty()) {
        auto parsed = parse_size(value);
        if (!parsed) fatal(Error::make(ErrorKind::Usage, "max-size " + parsed.error().message));
        or_fail(cache.is_cache());
        if (auto w = cache.store_size_limit(*parsed); !w) maintenance_failed(std::move(w.error()));
    }
    auto limit = or_fail(cache.size_limit(settings.lookup()));
    std::printf("%s (%s)\n", limit.bytes ? format_size(limit.bytes).c_str() : "no limit",
                limit_origin(limit, settings).c_str());
    return kExitOk;
}

// The cache named is read-only here, so builds build into another: say which,
// since these commands act on the one named.
void note_demoted(const std::optional<std::string>& cache_dir, const EnvLookup& env) {
    auto own = resolve_own_cache(cache_dir, env);
    if (!own || !own->demoted) return;
    std::fprintf(stderr,
                 "bekc: note: %s is read-only here: builds take hits from it and build misses "
                 "into %s (bekc cache --cache-dir %s for that one)\n",
                 own->demoted->c_str(), own->root.c_str(), own->root.c_str());
}

CLI::App* add_packs_subcommand(CLI::App& cmd, PacksOptions& p) {
    auto* packs = cmd.add_subcommand(
        "packs",
        "List the read-only caches builds look in, in order, with the installed packs (Python "
        "sites' bekc_packs/); never writes to them");
    packs->add_flag("--json", p.json, "A JSON array, one object per cache");
    packs->add_flag("--verify", p.verify,
                    "Check every entry of each, changing nothing; exit 1 when one is damaged");
    auto* remove = packs->add_option(
        "--remove", p.remove,
        "Remove the installed pack NAME (not one pip installed: pip uninstall it)");
    remove->excludes(packs->get_option("--verify"))->excludes(packs->get_option("--json"));
    packs->add_option("--python-site", p.python_sites,
                      "A site-packages directory whose bekc_packs/ to use (repeatable; "
                      "$VIRTUAL_ENV's is used too)");
    packs->add_option("--read-only-caches", p.read_only_caches,
                      "The read-only caches, ':'-separated (default: $BEKC_READ_ONLY_CACHES, "
                      "read_only_caches in bekc.conf)");
    return packs;
}

}  // namespace

Action add_cache_command(CLI::App& app) {
    auto o = std::make_shared<CacheOptions>();
    CLI::App* cmd = app.add_subcommand(
        "cache",
        "Look at and maintain the build cache, the one --cache-dir names; read-only caches "
        "(read_only_caches) are never touched");
    cmd->require_subcommand(1);
    cmd->add_option("--cache-dir", o->cache_dir,
                    "Cache directory (default: $BEKC_CACHE_DIR, cache_dir in bekc.conf, "
                    "$XDG_CACHE_HOME/bekc or ~/.cache/bekc)");
    auto* path = cmd->add_subcommand("path", "Print the cache directory");
    auto* ls = cmd->add_subcommand("ls", "List entries, most recently used first");
    ls->add_flag("--json", o->json,
                 "Print one JSON object: the cache, its entries and totals (docs/cli.md, "
                 "\"Scripting\")");
    auto* clear = cmd->add_subcommand("clear", "Remove every entry, or those of module NAME");
    clear->add_option("name", o->name, "Module name (--name of the build)");
    auto* st = cmd->add_subcommand(
        "stats", "Hits, misses, counts and sizes, and the size limit in force (like ccache -s)");
    st->add_flag("-z,--zero", o->zero, "Reset the hit and miss counters (like ccache -z)");
    st->add_flag("--json", o->json,
                 "Print one JSON object: counters, counts, sizes and the size limit (docs/cli.md, "
                 "\"Scripting\")");
    auto* pr = cmd->add_subcommand("prune", "Remove least recently used entries down to a size");
    pr->add_option("--max-size", o->max_size,
                   "Size to keep, e.g. 500M, 2G (default: the size limit in force)");
    auto* ver = cmd->add_subcommand(
        "verify", "Check every file bekc reads from the cache; remove what is damaged");
    auto* mx = cmd->add_subcommand(
        "max-size",
        "Show the size limit, or store SIZE in the cache (0: no limit); $BEKC_CACHE_MAX_SIZE "
        "overrides it; the default is 5 GB");
    mx->add_option("size", o->new_max_size, "e.g. 500M, 2G, 0");
    auto packs_options = std::make_shared<PacksOptions>();
    auto* packs = add_packs_subcommand(*cmd, *packs_options);
    // `bekc cache ls --cache-dir D` as well as `bekc cache --cache-dir D ls`.
    for (auto* sub : {path, ls, st, clear, pr, ver, mx, packs}) sub->fallthrough();
    return [=] {
        Settings settings = load_settings_or_exit(o->cache_dir);
        Cache cache(or_fatal(resolve_cache_root(o->cache_dir, settings.lookup())));
        if (path->parsed()) {
            std::printf("%s\n", cache.path().c_str());
            return static_cast<int>(kExitOk);
        }
        if (packs->parsed()) return cache_packs(o->cache_dir, *packs_options, settings);
        note_demoted(o->cache_dir, settings.lookup());
        if (ls->parsed()) return o->json ? list_json(cache) : list(cache);
        if (st->parsed()) return stats(cache, settings, o->zero, o->json);
        if (mx->parsed()) return max_size(cache, o->new_max_size, settings);
        if (clear->parsed()) {
            size_t n = or_fail(cache.clear(o->name));
            std::printf("removed %zu entries\n", n);
            return static_cast<int>(kExitOk);
        }
        if (pr->parsed()) return prune(cache, o->max_size, settings);
        if (ver->parsed()) return verify(cache);
        return static_cast<int>(kExitUsage);
    };
}

}  // namespace bekc::cli
