#include "store/stats.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iterator>

#include <nlohmann/json.hpp>

#include "store/layout.hpp"
#include "store/lock.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// `bekc cache stats --zero` waits this long for the counters' lock.
constexpr std::chrono::milliseconds kLockWait{1000};

fs::path stats_lock() {
    return CacheLayout::named_lock("stats");
}

uint64_t count_of(const nlohmann::json& j, const char* name) {
    auto it = j.find(name);
    return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

std::expected<void, Error> write_counters(const CacheDir& cache, const BuildCounters& c) {
    nlohmann::json j = {{"local_hits", c.local_hits},
                        {"remote_hits", c.remote_hits},
                        {"misses", c.misses},
                        {"errors", c.errors},
                        {"remote_waits", c.remote_waits},
                        {"remote_waits_served", c.remote_waits_served},
                        {"wait_ms", c.wait_ms},
                        {"saved_ms", c.saved_ms},
                        {"zeroed_at", c.zeroed_at}};
    return cache.write(CacheLayout::stats_file(), dump_json(j) + "\n");
}

constexpr const char* kCounters[] = {"local_hits", "remote_hits", "misses", "errors"};
// Read back from stats.json with the counters; added up from the waits' tally.
constexpr const char* kWaitCounters[] = {"remote_waits", "remote_waits_served", "wait_ms",
                                         "saved_ms"};
constexpr const char* kWaitTally = "remote_waits";

uint64_t& field(BuildCounters& c, size_t i) {
    uint64_t* fields[] = {&c.local_hits, &c.remote_hits, &c.misses, &c.errors};
    return *fields[i];
}

uint64_t& wait_field(BuildCounters& c, size_t i) {
    uint64_t* fields[] = {&c.remote_waits, &c.remote_waits_served, &c.wait_ms, &c.saved_ms};
    return *fields[i];
}

// The waits' tally: one line "<served 0|1> <wait ms> <saved ms>" per wait.
// A line cut short (a crash mid-write) or garbled counts for nothing.
void add_wait_lines(BuildCounters& c, std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) break;
        unsigned long long served = 0, wait = 0, saved = 0;
        std::string line(text.substr(pos, nl - pos));
        pos = nl + 1;
        char extra = 0;
        if (std::sscanf(line.c_str(), "%llu %llu %llu %c", &served, &wait, &saved, &extra) != 3 ||
            served > 1)
            continue;
        c.remote_waits += 1;
        c.remote_waits_served += served;
        c.wait_ms += wait;
        c.saved_ms += saved;
    }
}

// The waits' tally read and, with `take`, emptied.
void wait_tally(const CacheDir& cache, BuildCounters& c, bool take) {
    fs::path rel = CacheLayout::stats_tally(kWaitTally);
    auto text = cache.read(rel, 1 << 20);
    if (!text) return;
    add_wait_lines(c, *text);
    if (!take) return;
    if (auto fd = cache.open_rw(rel)) (void)::ftruncate(fd->get(), 0);
}

// A tally's length and, with `take`, the tally emptied.
uint64_t tally(const CacheDir& cache, size_t i, bool take) {
    auto fd = cache.open_rw(CacheLayout::stats_tally(kCounters[i]));
    struct stat st;
    if (!fd || ::fstat(fd->get(), &st) != 0) return 0;
    if (take && ::ftruncate(fd->get(), 0) != 0) return 0;
    return static_cast<uint64_t>(st.st_size);
}

// The counters written in stats.json, without the tallies.
BuildCounters read_folded(const CacheDir& cache) {
    auto text = cache.read(CacheLayout::stats_file(), 1 << 16);
    if (!text) return {};
    auto j = parse_json(*text).value_or(nullptr);
    if (!j.is_object()) return {};
    BuildCounters c;
    for (size_t i = 0; i < std::size(kCounters); ++i) field(c, i) = count_of(j, kCounters[i]);
    for (size_t i = 0; i < std::size(kWaitCounters); ++i)
        wait_field(c, i) = count_of(j, kWaitCounters[i]);
    if (auto it = j.find("zeroed_at"); it != j.end() && it->is_number_integer())
        c.zeroed_at = it->get<int64_t>();
    return c;
}

// Moves the tallies into stats.json, under the counters' lock (held by the
// caller); `zero` starts them all again. An append between a tally's read and
// its truncation is the one count that can be lost.
std::expected<void, Error> fold(const CacheDir& cache, const FileLock& /*held*/, bool zero) {
    BuildCounters c = zero ? BuildCounters{} : read_folded(cache);
    for (size_t i = 0; i < std::size(kCounters); ++i) {
        uint64_t n = tally(cache, i, true);
        if (!zero) field(c, i) += n;
    }
    BuildCounters waits;
    wait_tally(cache, waits, true);
    if (!zero)
        for (size_t i = 0; i < std::size(kWaitCounters); ++i)
            wait_field(c, i) += wait_field(waits, i);
    if (zero)
        c.zeroed_at = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
    return write_counters(cache, c);
}

// A tally folds once it holds this many counts.
constexpr uint64_t kFoldAt = 4096;

}  // namespace

BuildCounters read_counters(const CacheDir& cache) {
    BuildCounters c = read_folded(cache);
    for (size_t i = 0; i < std::size(kCounters); ++i) field(c, i) += tally(cache, i, false);
    wait_tally(cache, c, false);
    return c;
}

std::expected<void, Error> count_remote_wait(const CacheDir& cache, bool served, uint64_t wait_ms,
                                             uint64_t saved_ms) {
    std::string line = std::to_string(served ? 1 : 0) + " " + std::to_string(wait_ms) + " " +
                       std::to_string(saved_ms) + "\n";
    auto size = cache.append(CacheLayout::stats_tally(kWaitTally), line);
    if (!size) return std::unexpected(size.error());
    if (*size < kFoldAt * 8) return {};
    auto lock = FileLock::try_acquire(cache, stats_lock());
    if (!lock) return {};
    return fold(cache, *lock, false);
}

std::expected<void, Error> count_build(const CacheDir& cache, BuildCount what) {
    // One byte appended, no lock: a hit stays as cheap as it was.
    const size_t i = static_cast<size_t>(what);
    auto size = cache.append(CacheLayout::stats_tally(kCounters[i]), "+");
    if (!size) return std::unexpected(size.error());
    if (*size < kFoldAt) return {};
    // Never waited for: a hit answered in a Python process holds the GIL.
    // A holder is folding (or zeroing) already, or the lock cannot be taken;
    // either way the count stays in the tally and a later build folds it.
    auto lock = FileLock::try_acquire(cache, stats_lock());
    if (!lock) return {};
    return fold(cache, *lock, false);
}

std::expected<void, Error> zero_counters(const CacheDir& cache) {
    auto lock = FileLock::acquire(cache, stats_lock(), kLockWait);
    if (!lock) return std::unexpected(lock.error());
    return fold(cache, *lock, true);
}

}  // namespace bekc
