// The `bekc cache` operations (list, stats, clear, prune, verify) and the
// automatic size limit. Each proves first that the root is a bekc cache, and
// then visits only names of bekc's own patterns (store/layout.hpp), through
// store/cache_dir.hpp, which follows no link.
#include <algorithm>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/build_history.hpp"
#include "store/cache.hpp"
#include "store/lock.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

using WallClock = std::chrono::system_clock;
using Visit = std::function<void(const std::string& key, const fs::path& rel)>;

// What for_each_keyed visits: directories, regular files, or any kind
// (links included, never followed).
enum class Items { Dirs, Files, Any };

// Every keyed item (entry directory, record or lock file) under `top`:
// top/ab/<rest><extension>, where ab + rest is a key. Foreign names, and
// items not of `kind`, are skipped.
void for_each_keyed(const CacheDir& dir, const fs::path& top, std::string_view extension,
                    Items kind, const Visit& visit) {
    auto fans = dir.list(top);
    if (!fans) return;
    for (const auto& fan : *fans) {
        if (!fan.is_dir || !is_hex(fan.name, 2)) continue;
        auto items = dir.list(top / fan.name);
        if (!items) continue;
        for (const auto& item : *items) {
            if (kind == Items::Dirs ? !item.is_dir : kind == Items::Files && !item.is_regular)
                continue;
            std::string key = CacheLayout::key_of(fan.name, item.name, extension);
            if (!key.empty()) visit(key, top / fan.name / item.name);
        }
    }
}

WallClock::time_point to_time(int64_t ns) {
    return WallClock::time_point(
        std::chrono::duration_cast<WallClock::duration>(std::chrono::nanoseconds(ns)));
}

WallClock::time_point mtime_of(const CacheDir& dir, const fs::path& rel) {
    auto st = dir.stat(rel);
    return to_time(st ? st->file.mtime_ns : 0);
}

WallClock::time_point last_use_of(const CacheDir& dir, const fs::path& entry) {
    auto marker = dir.stat(entry / kLastUseFile);
    return marker && marker->file.is_regular ? to_time(marker->file.mtime_ns)
                                             : mtime_of(dir, entry);
}

std::string manifest_name(const CacheDir& dir, const fs::path& entry) {
    auto text = dir.read(entry / kManifestFile, 16 << 20);
    if (!text) return "";
    auto j = parse_json(*text).value_or(nullptr);
    auto it = j.is_object() ? j.find("name") : j.end();
    return j.is_object() && it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// Every record file's folder and ending, an older bekc's records included:
// what clear and prune remove.
std::vector<RecordFolder> all_record_folders() {
    auto all = CacheLayout::record_folders();
    for (auto& old : CacheLayout::old_record_folders()) all.push_back(std::move(old));
    return all;
}

// The check of a file no record of this bekc's is in.
bool no_record_is_valid(const CacheDir&, const fs::path&) {
    return false;
}

// A candidate for prune: an entry or a direct record, oldest use first.
struct Item {
    std::string key;
    fs::path rel;
    uint64_t bytes;
    WallClock::time_point last_use;
    bool is_entry;
    bool is_step = false;  // a step result (store/step_cache.hpp): a tree under its key's lock
};

// A sealed directory outside entries/ and the lock it is published under.
struct SealedTree {
    fs::path rel;
    fs::path lock;
};

// The sealed trees besides the entries: runtime/<h>/include,
// runtime/<h>/obj/<c> and the step results steps/ab/cdef….
std::vector<SealedTree> sealed_trees(const CacheDir& dir) {
    std::vector<SealedTree> trees;
    if (auto runtimes = dir.list(CacheLayout::runtime())) {
        for (const auto& r : *runtimes) {
            if (!r.is_dir || !is_hex(r.name, 16)) continue;
            trees.push_back(
                {CacheLayout::runtime_include(r.name), CacheLayout::runtime_include_lock(r.name)});
            if (auto objs = dir.list(CacheLayout::runtime() / r.name / "obj"))
                for (const auto& o : *objs)
                    if (o.is_dir && is_hex(o.name, 16))
                        trees.push_back({CacheLayout::runtime_object_dir(r.name, o.name),
                                         CacheLayout::runtime_object_lock(r.name, o.name)});
        }
    }
    std::erase_if(trees, [&](const SealedTree& t) { return !dir.stat(t.rel); });
    for_each_keyed(dir, CacheLayout::steps(), "", Items::Dirs,
                   [&](const std::string& key, const fs::path& rel) {
                       trees.push_back({rel, CacheLayout::lock(key)});
                   });
    return trees;
}

// How `cache verify` names what it removed: "entry <key>" for an entry,
// else the path.
std::string shown_in_report(const fs::path& rel, const CacheLayout& layout) {
    if (rel.begin() == rel.end() || *rel.begin() != CacheLayout::entries())
        return layout.path(rel).string();
    return fmt::format("entry {}", CacheLayout::key_of(rel.parent_path().filename().string(),
                                                       rel.filename().string(), ""));
}

// A check's error message, or nullopt when it passed.
template <typename T>
std::optional<std::string> failure_of(const std::expected<T, Error>& checked) {
    if (checked) return std::nullopt;
    return checked.error().message;
}

// Shown by maintenance when is_cache() fails; a missing root is an empty cache.
std::expected<bool, Error> require_cache(const Cache& cache) {
    return cache.is_cache();
}

}  // namespace

std::expected<std::vector<EntryInfo>, Error> Cache::list() const {
    auto ok = require_cache(*this);
    if (!ok) return std::unexpected(ok.error());
    std::vector<EntryInfo> infos;
    for_each_keyed(dir(), CacheLayout::entries(), "", Items::Dirs,
                   [&](const std::string& key, const fs::path& rel) {
                       EntryInfo info{key,
                                      manifest_name(dir(), rel),
                                      layout_.path(rel),
                                      dir().tree_bytes(rel),
                                      last_use_of(dir(), rel),
                                      0,
                                      ""};
                       auto entry = check_entry(dir(), rel, key, CheckLevel::Cheap);
                       if (entry) {
                           info.targets = entry->targets;
                       } else {
                           info.problem = entry.error().message;
                       }
                       infos.push_back(std::move(info));
                   });
    std::sort(infos.begin(), infos.end(),
              [](const EntryInfo& a, const EntryInfo& b) { return a.last_use > b.last_use; });
    return infos;
}

std::expected<CacheStats, Error> Cache::stats() const {
    auto ok = require_cache(*this);
    if (!ok) return std::unexpected(ok.error());
    CacheStats stats;
    for_each_keyed(dir(), CacheLayout::entries(), "", Items::Dirs,
                   [&](const std::string&, const fs::path& rel) {
                       ++stats.entries;
                       stats.entry_bytes += dir().tree_bytes(rel);
                   });
    for_each_keyed(dir(), CacheLayout::direct(), CacheLayout::kRecordExtension, Items::Files,
                   [&](const std::string&, const fs::path&) { ++stats.direct_records; });
    stats.bytes = *ok ? dir().tree_bytes("") : 0;
    return stats;
}

std::expected<size_t, Error> Cache::clear(const std::optional<std::string>& name) {
    auto ok = require_cache(*this);
    if (!ok) return std::unexpected(ok.error());
    if (!*ok) return 0;
    size_t removed = 0;
    std::string error;
    for_each_keyed(dir(), CacheLayout::entries(), "", Items::Dirs,
                   [&](const std::string&, const fs::path& rel) {
                       if (!error.empty() || (name && manifest_name(dir(), rel) != *name)) return;
                       if (auto d = discard(rel); !d) {
                           error = d.error().message;
                       } else {
                           ++removed;
                       }
                   });
    if (!name && error.empty()) {
        for (const RecordFolder& records : all_record_folders())
            for_each_keyed(dir(), records.dir, records.extension, Items::Any,
                           [&](const std::string&, const fs::path& rel) {
                               if (auto d = discard(rel); !d && error.empty())
                                   error = d.error().message;
                           });
        for (const fs::path& memo : CacheLayout::root_memos()) {
            auto st = dir().stat(memo);
            if (st && st->file.is_regular)
                if (auto d = dir().remove_file(memo); !d && error.empty())
                    error = d.error().message;
        }
        if (auto runtimes = dir().list(CacheLayout::runtime()))
            for (const auto& r : *runtimes)
                if (r.is_dir && is_hex(r.name, 16))
                    if (auto d = discard(CacheLayout::runtime() / r.name); !d && error.empty())
                        error = d.error().message;
        for_each_keyed(dir(), CacheLayout::steps(), "", Items::Dirs,
                       [&](const std::string&, const fs::path& rel) {
                           if (auto d = discard(rel); !d && error.empty())
                               error = d.error().message;
                       });
        auto stale = remove_stale_temps();
        if (!stale && error.empty()) error = stale.error().message;
    }
    remove_idle_locks();
    if (!error.empty())
        return fail(ErrorKind::Cache,
                    fmt::format("{} (removed {} entries before that)", error, removed));
    return removed;
}

std::expected<PruneReport, Error> Cache::prune(uint64_t max_bytes) {
    auto ok = require_cache(*this);
    if (!ok) return std::unexpected(ok.error());
    if (!*ok) return PruneReport{};
    return prune_to(max_bytes, std::chrono::seconds(0), "");
}

std::expected<PruneReport, Error> Cache::prune_to(uint64_t max_bytes,
                                                  std::chrono::seconds spare_recent,
                                                  const std::string& keep_key) {
    PruneReport report;
    auto stale = remove_stale_temps();
    if (!stale) return std::unexpected(stale.error());
    report.stale_temps_removed = *stale;
    std::vector<Item> items;
    for_each_keyed(
        dir(), CacheLayout::entries(), "", Items::Dirs,
        [&](const std::string& key, const fs::path& rel) {
            items.push_back({key, rel, dir().tree_bytes(rel), last_use_of(dir(), rel), true});
        });
    for_each_keyed(dir(), CacheLayout::steps(), "", Items::Dirs,
                   [&](const std::string& key, const fs::path& rel) {
                       items.push_back(
                           {key, rel, dir().tree_bytes(rel), last_use_of(dir(), rel), false, true});
                   });
    for (const RecordFolder& records : all_record_folders())
        for_each_keyed(
            dir(), records.dir, records.extension, Items::Files,
            [&](const std::string& key, const fs::path& rel) {
                auto st = dir().stat(rel);
                items.push_back({key, rel, st ? st->file.size : 0, mtime_of(dir(), rel), false});
            });
    std::sort(items.begin(), items.end(),
              [](const Item& a, const Item& b) { return a.last_use < b.last_use; });
    report.bytes_before = dir().tree_bytes("");
    report.bytes_after = report.bytes_before;
    auto recent = WallClock::now() - spare_recent;
    std::string error;
    for (const Item& item : items) {
        if (report.bytes_after <= max_bytes) break;
        if (item.is_entry) {
            if (item.key == keep_key || item.last_use > recent) continue;
            // Held: being published or replaced right now.
            auto held = FileLock::try_acquire(dir(), CacheLayout::lock(item.key));
            if (!held) continue;
            if (auto d = discard(item.rel); !d) {
                error = d.error().message;
                break;
            }
            ++report.entries_removed;
        } else {
            if (item.is_step && item.last_use > recent) continue;
            // A step result being replaced (--force) is left for the next prune.
            std::optional<FileLock> held;
            if (item.is_step && !(held = FileLock::try_acquire(dir(), CacheLayout::lock(item.key))))
                continue;
            auto d = item.is_step ? discard(item.rel) : dir().remove_file(item.rel);
            if (!d) {
                error = d.error().message;
                break;
            }
            ++(item.is_step ? report.steps_removed : report.records_removed);
        }
        report.bytes_after -= std::min(report.bytes_after, item.bytes);
    }
    remove_idle_locks();
    if (!error.empty())
        return fail(ErrorKind::Cache,
                    fmt::format("{} (removed {} entries and {} records before that)", error,
                                report.entries_removed, report.records_removed));
    report.bytes_after = dir().tree_bytes("");
    return report;
}

std::expected<void, Error> Cache::enforce_limit(const Entry& published, std::string_view direct_key,
                                                uint64_t limit) {
    if (limit == 0) return {};
    // One process at a time keeps the count; the others skip (amortised).
    auto lock = FileLock::try_acquire(dir(), CacheLayout::named_lock("size"));
    if (!lock) return {};
    constexpr int kPublishesPerCount = 16;
    auto text = dir().read(CacheLayout::size_state(), 1 << 16);
    nlohmann::json state = text ? parse_json(*text).value_or(nullptr) : nullptr;
    uint64_t estimate = 0;
    int publishes = kPublishesPerCount;  // no state yet: count now
    if (state.is_object() && state["bytes"].is_number_unsigned() &&
        state["publishes"].is_number_integer()) {
        estimate = state["bytes"].get<uint64_t>();
        publishes = state["publishes"].get<int>();
    }
    estimate += dir().tree_bytes(CacheLayout::entry(published.key));
    if (is_valid_key(direct_key))
        estimate += dir().tree_bytes(CacheLayout::direct_record(direct_key));
    ++publishes;
    std::expected<void, Error> outcome;
    if (estimate > limit || publishes >= kPublishesPerCount) {
        estimate = dir().tree_bytes("");
        publishes = 0;
        if (estimate > limit) {
            // Down to 90%, so the next publishes do not each trigger a prune.
            auto pruned = prune_to(limit / 10 * 9, options_.recent_use, published.key);
            if (pruned) {
                estimate = pruned->bytes_after;
            } else {
                outcome = std::unexpected(std::move(pruned.error().within(
                    "the cache is over its size limit and could not be pruned")));
            }
        }
    }
    (void)dir().write(
        CacheLayout::size_state(),
        dump_json(nlohmann::json{{"bytes", estimate}, {"publishes", publishes}}) + "\n");
    return outcome;
}

std::expected<VerifyReport, Error> Cache::verify() {
    auto ok = require_cache(*this);
    if (!ok) return std::unexpected(ok.error());
    VerifyReport report;
    if (!*ok) return report;
    std::string error;
    auto remove_bad = [&](const fs::path& rel, const std::string& why, bool tree) {
        report.removed.emplace_back(shown_in_report(rel, layout_), why);
        auto d = tree ? discard(rel) : dir().remove_file(rel);
        if (!d && error.empty()) error = d.error().message;
    };
    // A tree that fails `problem` is removed under the lock it is published
    // under, and checked again there: a build holding that lock may be
    // replacing it right now (a rebuilt entry, --force's step results).
    auto remove_bad_tree = [&](const fs::path& rel, const fs::path& lock,
                               const std::function<std::optional<std::string>()>& problem) {
        auto why = problem();
        if (!why) return;
        auto held = FileLock::try_acquire(dir(), lock);
        if (!held) {
            report.removed.emplace_back(shown_in_report(rel, layout_),
                                        *why + " (left: being rebuilt)");
            return;
        }
        if ((why = problem())) remove_bad(rel, *why, true);
    };
    for_each_keyed(dir(), CacheLayout::entries(), "", Items::Dirs,
                   [&](const std::string& key, const fs::path& rel) {
                       ++report.checked;
                       remove_bad_tree(rel, CacheLayout::lock(key), [&] {
                           return failure_of(check_entry(dir(), rel, key, CheckLevel::Full));
                       });
                   });
    for (const auto& tree : sealed_trees(dir())) {
        ++report.checked_other;
        remove_bad_tree(tree.rel, tree.lock,
                        [&] { return failure_of(check_seal(dir(), tree.rel, CheckLevel::Full)); });
    }
    // A record is a regular file (lstat): a directory, FIFO or link in its
    // place is removed too (a link itself, never what it names).
    auto check_records = [&](const RecordFolder& top,
                             bool (*valid)(const CacheDir&, const fs::path&),
                             const std::string& what) {
        for_each_keyed(dir(), top.dir, top.extension, Items::Any,
                       [&](const std::string&, const fs::path& rel) {
                           ++report.checked_other;
                           auto st = dir().stat(rel);
                           if (!st || !st->file.is_regular || !valid(dir(), rel))
                               remove_bad(rel, what, true);
                       });
    };
    const std::string_view rec = CacheLayout::kRecordExtension;
    check_records({CacheLayout::direct(), rec}, direct_file_is_valid, "not a direct-mode record");
    check_records({CacheLayout::portable(), rec}, direct_file_is_valid, "not a portable record");
    check_records({CacheLayout::history(), ".json"}, history_file_is_valid,
                  "not a build history record");
    for (const RecordFolder& old : CacheLayout::old_record_folders())
        check_records(old, no_record_is_valid,
                      "a record of an older bekc, which this one never reads");
    for (const fs::path& memo : CacheLayout::root_json_files()) {
        auto st = dir().stat(memo);
        if (!st) continue;
        ++report.checked_other;
        auto text =
            st->file.is_regular
                ? dir().read(memo, 1 << 20)
                : std::expected<std::string, Error>(fail(ErrorKind::Cache, "not a regular file"));
        if (!text || !parse_json(*text).value_or(nullptr).is_object())
            remove_bad(memo, "not a JSON object", false);
    }
    auto stale = remove_stale_temps();
    if (stale) report.stale_temps_removed = *stale;
    if (!stale && error.empty()) error = stale.error().message;
    remove_idle_locks();
    if (!error.empty()) return fail(ErrorKind::Cache, error);
    return report;
}

std::expected<VerifyReport, Error> Cache::inspect() const {
    auto ok = require_cache(*this);
    if (!ok) return std::unexpected(ok.error());
    VerifyReport report;
    if (!*ok) return report;
    for_each_keyed(dir(), CacheLayout::entries(), "", Items::Dirs,
                   [&](const std::string& key, const fs::path& rel) {
                       ++report.checked;
                       if (auto why = failure_of(check_entry(dir(), rel, key, CheckLevel::Full)))
                           report.damaged.emplace_back(shown_in_report(rel, layout_), *why);
                   });
    for (const auto& tree : sealed_trees(dir())) {
        ++report.checked_other;
        if (auto why = failure_of(check_seal(dir(), tree.rel, CheckLevel::Full)))
            report.damaged.emplace_back(shown_in_report(tree.rel, layout_), *why);
    }
    return report;
}

std::expected<size_t, Error> Cache::remove_stale_temps() const {
    size_t removed = 0;
    auto items = dir().list(CacheLayout::tmp());
    if (!items) return std::unexpected(items.error());
    auto now = WallClock::now();
    for (const auto& item : *items) {
        if (!CacheLayout::is_own_temp(item.name) || item.is_symlink) continue;
        fs::path rel = CacheLayout::tmp() / item.name;
        if (now - mtime_of(dir(), rel) <= options_.stale_temp_age) continue;
        // A staging directory whose key is locked belongs to a live builder,
        // however old it is.
        std::string key = CacheLayout::staging_key(item.name);
        if (!key.empty() && !FileLock::try_acquire(dir(), CacheLayout::lock(key))) continue;
        if (auto d = dir().remove_tree(rel); !d) return std::unexpected(d.error());
        ++removed;
    }
    // What killed writers left beside their targets ("X.tmp.<suffix>"):
    // in the root (memos, the marker) and among the direct and history records.
    std::vector<fs::path> dirs{""};
    for (const RecordFolder& records : CacheLayout::record_folders())
        if (auto fans = dir().list(records.dir))
            for (const auto& fan : *fans)
                if (fan.is_dir && is_hex(fan.name, 2)) dirs.push_back(records.dir / fan.name);
    for (const auto& d : dirs) {
        auto names = dir().list(d);
        if (!names) continue;
        for (const auto& item : *names) {
            fs::path rel = d / item.name;
            if (!item.is_regular || !CacheLayout::is_write_temp(item.name) ||
                now - mtime_of(dir(), rel) <= options_.stale_temp_age)
                continue;
            if (auto gone = dir().remove_file(rel); !gone) return std::unexpected(gone.error());
            ++removed;
        }
    }
    return removed;
}

void Cache::remove_idle_locks() const {
    for_each_keyed(dir(), CacheLayout::locks(), ".lock", Items::Files,
                   [&](const std::string&, const fs::path& rel) {
                       // Deleting while holding it is safe: acquire() re-checks the path.
                       if (auto lock = FileLock::try_acquire(dir(), rel))
                           lock->remove_and_release();
                   });
}

}  // namespace bekc
