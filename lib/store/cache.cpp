#include "store/cache.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "store/lock.hpp"

namespace bekc {

namespace {

// https://bford.info/cachedir/: backup and indexing tools skip the tree.
constexpr std::string_view kCacheDirTag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by bekc.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

CacheError io_error(std::string message) {
    return {CacheError::Kind::Io, std::move(message)};
}

}  // namespace

Cache::Cache(fs::path root, CacheOptions options) : layout_(std::move(root)), options_(options) {}

std::expected<Entry, Miss> Cache::probe(std::string_view key) const {
    fs::path dir = layout_.entry_dir(key);
    if (!stat_file(dir)) return std::unexpected(Miss{Miss::Kind::Absent, "not in the cache"});
    auto entry = check_entry(dir, key, CheckLevel::Cheap);
    if (!entry) {
        return std::unexpected(
            Miss{Miss::Kind::Corrupt,
                 fmt::format("cache entry {} is corrupt: {}", dir.string(), entry.error())});
    }
    return *entry;
}

std::expected<Entry, Miss> Cache::lookup(std::string_view key) {
    auto entry = probe(key);
    if (!entry && entry.error().kind == Miss::Kind::Corrupt) {
        // Only remove it while holding the key's lock: a builder holding it
        // may be replacing this very entry, and will remove it itself.
        if (auto lock = FileLock::try_acquire(layout_.lock_file(key))) {
            auto again = probe(key);
            if (!again && again.error().kind == Miss::Kind::Corrupt) {
                discard(layout_.entry_dir(key));
            }
            if (again) entry = std::move(again);
        }
    }
    if (entry) touch(entry->dir / kLastUseFile);
    return entry;
}

std::expected<BuildOutcome, CacheError> Cache::get_or_build(std::string_view key,
                                                            const Builder& build) {
    auto first = lookup(key);
    if (first) return BuildOutcome{*first, true, ""};
    std::string repaired = first.error().kind == Miss::Kind::Corrupt ? first.error().reason : "";
    auto lock = FileLock::acquire(layout_.lock_file(key), options_.lock_timeout);
    if (!lock) {
        return std::unexpected(CacheError{
            lock.error().timed_out ? CacheError::Kind::LockTimeout : CacheError::Kind::Io,
            lock.error().message});
    }
    // Whoever held the lock before us may have published this key.
    auto again = probe(key);
    if (again) {
        touch(again->dir / kLastUseFile);
        return BuildOutcome{*again, true, repaired};
    }
    if (again.error().kind == Miss::Kind::Corrupt) {
        repaired = again.error().reason;
        discard(layout_.entry_dir(key));
    }
    auto staging = make_staging(key);
    if (!staging) return std::unexpected(staging.error());
    std::expected<void, std::string> built;
    try {
        built = build(*staging);
    } catch (...) {
        discard(*staging);  // the fatal path: nothing half-built stays behind
        throw;
    }
    if (!built) {
        discard(*staging);
        return std::unexpected(CacheError{CacheError::Kind::Builder, built.error()});
    }
    auto entry = publish(*staging, key);
    if (!entry) return std::unexpected(entry.error());
    return BuildOutcome{*entry, false, repaired};
}

std::expected<fs::path, CacheError> Cache::make_staging(std::string_view key) {
    std::error_code ec;
    fs::create_directories(layout_.tmp_dir(), ec);
    if (ec) {
        return std::unexpected(io_error(fmt::format("cannot create the cache directory {}: {}",
                                                    layout_.tmp_dir().string(), ec.message())));
    }
    fs::path tag = layout_.root() / "CACHEDIR.TAG";
    if (!stat_file(tag)) (void)write_atomic(tag, kCacheDirTag);
    // mkdir rather than mkdtemp: mkdtemp's mode 0700 would make entries
    // unreadable to the other users of a shared cache; mkdir honours umask.
    fs::path dir = layout_.tmp_dir() / (std::string(key) + "." + unique_suffix());
    if (mkdir(dir.c_str(), 0777) != 0) {
        return std::unexpected(
            io_error(fmt::format("cannot create {}: {}", dir.string(), std::strerror(errno))));
    }
    return dir;
}

std::expected<Entry, CacheError> Cache::publish(const fs::path& staging, std::string_view key) {
    auto sealed = seal_entry(staging, key);
    if (!sealed) {
        discard(staging);
        return std::unexpected(CacheError{
            CacheError::Kind::Builder, "the build left an invalid cache entry: " + sealed.error()});
    }
    fs::path target = layout_.entry_dir(key);
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    int err = 0;
    for (int attempt = 0; attempt < 3; ++attempt) {
        if (::rename(staging.c_str(), target.c_str()) == 0) {
            Entry entry = *sealed;
            entry.dir = target;
            entry.library = target / sealed->library.filename();
            return entry;
        }
        err = errno;
        if (err != EEXIST && err != ENOTEMPTY) break;
        // Someone published first; without working locks that can happen.
        auto theirs = check_entry(target, key, CheckLevel::Cheap);
        if (theirs) {
            discard(staging);
            return *theirs;
        }
        discard(target);
    }
    discard(staging);
    return std::unexpected(io_error(fmt::format("cannot move the new cache entry to {}: {}",
                                                target.string(), std::strerror(err))));
}

void Cache::discard(const fs::path& dir) const {
    std::error_code ec;
    fs::path doomed = dir;
    if (dir.parent_path() != layout_.tmp_dir()) {
        // Renamed out of sight first, so nobody sees it half deleted.
        fs::path trash = layout_.tmp_dir() / (std::string(kTrashPrefix) + unique_suffix());
        fs::create_directories(layout_.tmp_dir(), ec);
        if (::rename(dir.c_str(), trash.c_str()) == 0) {
            doomed = trash;
        } else if (errno == ENOENT) {
            return;  // already gone
        }
    }
    fs::remove_all(doomed, ec);
}

DirectLookup Cache::lookup_direct(std::string_view direct_key) {
    return check_direct_file(layout_.direct_file(direct_key), options_.racy_window);
}

std::expected<void, std::string> Cache::record_direct(std::string_view direct_key,
                                                      const DirectInputs& inputs) {
    if (!is_valid_key(inputs.key)) return std::unexpected("not a cache key: " + inputs.key);
    return add_direct_record(layout_.direct_file(direct_key), inputs);
}

}  // namespace bekc
