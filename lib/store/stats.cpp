#include "store/stats.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
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
                        {"zeroed_at", c.zeroed_at}};
    return cache.write(CacheLayout::stats_file(), dump_json(j) + "\n");
}

constexpr const char* kCounters[] = {"local_hits", "remote_hits", "misses", "errors"};

uint64_t& field(BuildCounters& c, size_t i) {
    uint64_t* fields[] = {&c.local_hits, &c.remote_hits, &c.misses, &c.errors};
    return *fields[i];
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
    return c;
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
