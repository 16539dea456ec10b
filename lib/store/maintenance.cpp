// The `bekc cache` operations: list, stats, clear, prune, verify.
#include <sys/stat.h>

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

#include "store/cache.hpp"
#include "store/lock.hpp"

namespace bekc {

namespace {

using Visit = std::function<void(const std::string& key, const fs::path& path)>;

// Calls `visit` for every fanned-out item (entry directory, record or lock
// file) under `dir` whose name parses as a key; skips temporaries.
void for_each_keyed(const fs::path& dir, const Visit& visit) {
    std::error_code ec;
    for (fs::directory_iterator fan(dir, ec), end; !ec && fan != end; fan.increment(ec)) {
        std::error_code inner_ec;
        for (fs::directory_iterator it(fan->path(), inner_ec); !inner_ec && it != end;
             it.increment(inner_ec)) {
            std::string key = CacheLayout::key_of(it->path());
            if (!key.empty()) visit(key, it->path());
        }
    }
}

std::chrono::system_clock::time_point mtime_of(const fs::path& path) {
    auto stat = stat_file(path);
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(stat ? stat->mtime_ns : 0)));
}

std::chrono::system_clock::time_point last_use_of(const fs::path& entry_dir) {
    fs::path marker = entry_dir / kLastUseFile;
    return stat_file(marker) ? mtime_of(marker) : mtime_of(entry_dir);
}

std::string manifest_name(const fs::path& entry_dir) {
    auto text = read_text(entry_dir / kManifestFile);
    if (!text) return "";
    auto j = nlohmann::json::parse(*text, nullptr, false);
    auto it = j.is_object() ? j.find("name") : j.end();
    return j.is_object() && it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A candidate for prune: an entry or a direct record, oldest use first.
struct Item {
    fs::path path;
    uint64_t bytes;
    std::chrono::system_clock::time_point last_use;
    bool is_entry;
};

}  // namespace

std::vector<EntryInfo> Cache::list() const {
    std::vector<EntryInfo> infos;
    for_each_keyed(layout_.entries_dir(), [&](const std::string& key, const fs::path& dir) {
        EntryInfo info{key, manifest_name(dir), dir, tree_size(dir), last_use_of(dir), 0, ""};
        auto entry = check_entry(dir, key, CheckLevel::Cheap);
        if (entry) {
            info.targets = entry->targets;
        } else {
            info.problem = entry.error();
        }
        infos.push_back(std::move(info));
    });
    std::sort(infos.begin(), infos.end(),
              [](const EntryInfo& a, const EntryInfo& b) { return a.last_use > b.last_use; });
    return infos;
}

CacheStats Cache::stats() const {
    CacheStats stats;
    for_each_keyed(layout_.entries_dir(), [&](const std::string&, const fs::path& dir) {
        ++stats.entries;
        stats.bytes += tree_size(dir);
    });
    for_each_keyed(layout_.direct_dir(), [&](const std::string&, const fs::path& file) {
        ++stats.direct_records;
        auto stat = stat_file(file);
        stats.bytes += stat ? stat->size : 0;
    });
    return stats;
}

size_t Cache::clear(const std::optional<std::string>& name) {
    size_t removed = 0;
    for_each_keyed(layout_.entries_dir(), [&](const std::string&, const fs::path& dir) {
        if (name && manifest_name(dir) != *name) return;
        discard(dir);
        ++removed;
    });
    if (!name) {
        discard(layout_.direct_dir());
        remove_stale_temps();
    }
    remove_idle_locks();
    return removed;
}

PruneReport Cache::prune(uint64_t max_bytes) {
    PruneReport report;
    report.stale_temps_removed = remove_stale_temps();
    std::vector<Item> items;
    for_each_keyed(layout_.entries_dir(), [&](const std::string&, const fs::path& dir) {
        items.push_back({dir, tree_size(dir), last_use_of(dir), true});
    });
    for_each_keyed(layout_.direct_dir(), [&](const std::string&, const fs::path& file) {
        auto stat = stat_file(file);
        items.push_back({file, stat ? stat->size : 0, mtime_of(file), false});
    });
    std::sort(items.begin(), items.end(),
              [](const Item& a, const Item& b) { return a.last_use < b.last_use; });
    for (const Item& item : items) report.bytes_before += item.bytes;
    report.bytes_after = report.bytes_before;
    for (const Item& item : items) {
        if (report.bytes_after <= max_bytes) break;
        std::error_code ec;
        if (item.is_entry) {
            discard(item.path);
            ++report.entries_removed;
        } else {
            fs::remove(item.path, ec);
            ++report.records_removed;
        }
        report.bytes_after -= item.bytes;
    }
    remove_idle_locks();
    return report;
}

VerifyReport Cache::verify() {
    VerifyReport report;
    for_each_keyed(layout_.entries_dir(), [&](const std::string& key, const fs::path& dir) {
        ++report.checked;
        auto entry = check_entry(dir, key, CheckLevel::Full);
        if (entry) return;
        report.removed.emplace_back(key, entry.error());
        discard(dir);
    });
    report.stale_temps_removed = remove_stale_temps();
    remove_idle_locks();
    return report;
}

size_t Cache::remove_stale_temps() const {
    size_t removed = 0;
    auto now = std::chrono::system_clock::now();
    std::error_code ec;
    for (fs::directory_iterator it(layout_.tmp_dir(), ec), end; !ec && it != end;
         it.increment(ec)) {
        if (now - mtime_of(it->path()) <= options_.stale_temp_age) continue;
        // A staging directory whose key is locked belongs to a live builder,
        // however old it is. Anything else (trash, other scratch directories
        // of bekc) goes by age alone.
        std::string name = it->path().filename().string();
        std::string key = name.substr(0, name.find('.'));
        if (is_valid_key(key) && !FileLock::try_acquire(layout_.lock_file(key))) continue;
        std::error_code remove_ec;
        fs::remove_all(it->path(), remove_ec);
        ++removed;
    }
    return removed;
}

void Cache::remove_idle_locks() const {
    for_each_keyed(layout_.locks_dir(), [](const std::string&, const fs::path& file) {
        // Deleting while holding it is safe: acquire() re-checks the path.
        if (auto lock = FileLock::try_acquire(file)) lock->remove_and_release();
    });
}

}  // namespace bekc
