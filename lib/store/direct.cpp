#include "store/direct.hpp"

#include <sys/stat.h>

#include <cerrno>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "store/direct_record.hpp"
#include "store/hash.hpp"

namespace bekc {

namespace {

bool path_exists(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;  // a dangling symlink shadows too
}

// path_exists for the paths a record lists as absent, during one lookup. A
// record lists a header under every earlier search directory, and most of
// those are under a handful of directories that do not exist (<inc>/bits):
// a directory that lstat says is not there (or is no directory) holds none
// of them, so its paths need no lstat of their own.
class AbsentMemo {
  public:
    bool exists(const std::string& path) {
        size_t slash = path.rfind('/');
        if (slash != std::string::npos && slash > 0) {
            auto [it, fresh] = dir_missing_.try_emplace(path.substr(0, slash), false);
            if (fresh) {
                struct stat st;
                it->second =
                    lstat(it->first.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
            }
            if (it->second) return false;
        }
        return path_exists(path);
    }

  private:
    std::map<std::string, bool, std::less<>> dir_missing_;
};

// Content hashes taken during one lookup, reused across records only while
// the file's stat is unchanged, so a stored stat never pairs with older bytes.
class HashMemo {
  public:
    std::optional<std::string> xxh128(const std::string& path, const FileStat& stat,
                                      size_t& rehashed) {
        auto it = seen_.find(path);
        if (it != seen_.end() && it->second.first == stat) return it->second.second;
        auto hash = xxh128_file(path);
        if (!hash) return std::nullopt;
        ++rehashed;
        seen_[path] = {stat, *hash};
        return *hash;
    }

  private:
    std::map<std::string, std::pair<FileStat, std::string>> seen_;
};

// Checks one record; on success updates stale stats in place and says
// whether rewriting the record would spare the next lookup some hashing.
std::expected<bool, Error> check_record(DirectRecord& record, HashMemo& memo, AbsentMemo& absent,
                                        int64_t check_ns, std::chrono::nanoseconds window,
                                        size_t& rehashed, const BaseDir& base) {
    // Paths recorded under the base directory are checked under this one.
    auto here = [&](const std::string& recorded) -> std::expected<std::string, Error> {
        auto path = base.show(recorded);
        if (!path)
            return fail(ErrorKind::Cache, recorded + " is under a base directory, and none is set");
        return *path;
    };
    for (const auto& recorded : record.absent) {
        auto path = here(recorded);
        if (!path) return std::unexpected(path.error());
        if (absent.exists(*path))
            return fail(ErrorKind::Cache, *path + " now exists and shadows a header");
    }
    bool worth_refreshing = false;
    for (auto& file : record.files) {
        auto path = here(file.path);
        if (!path) return std::unexpected(path.error());
        auto now = stat_file(*path);
        if (!now) return fail(ErrorKind::Cache, *path + " no longer exists");
        if (!must_rehash(file.stat, *now, record.written_ns, window)) continue;
        auto hash = memo.xxh128(*path, *now, rehashed);
        if (!hash || *hash != file.xxh128) return fail(ErrorKind::Cache, *path + " changed");
        file.stat = *now;
        worth_refreshing |= !must_rehash(*now, *now, check_ns, window);
    }
    return worth_refreshing;
}

std::expected<RecordedFile, Error> fingerprint(const DirectDependency& dep) {
    auto stat = stat_file(dep.path);  // before reading: a later write moves it
    if (!stat || !stat->is_regular) {
        return fail(ErrorKind::Cache, fmt::format("{} is not a readable file", dep.path.string()));
    }
    auto bytes = read_file(dep.path);
    if (!bytes) return std::unexpected(bytes.error());
    if (!dep.sha256.empty() && sha256_hex(*bytes) != dep.sha256) {
        return fail(ErrorKind::Cache,
                    fmt::format("{} changed during the build", dep.path.string()));
    }
    return RecordedFile{dep.path.string(), *stat, xxh128_hex(*bytes)};
}

}  // namespace

bool must_rehash(const FileStat& recorded, const FileStat& now, int64_t record_ns,
                 std::chrono::nanoseconds racy_window) {
    if (recorded != now) return true;
    return std::max(now.mtime_ns, now.ctime_ns) >= record_ns - racy_window.count();
}

std::vector<fs::path> shadowing_paths(const std::vector<fs::path>& search_dirs,
                                      const fs::path& dependency,
                                      const std::vector<fs::path>& quoted_dirs) {
    const fs::path dep = dependency.lexically_normal();
    for (size_t i = 0; i < search_dirs.size(); ++i) {
        // path_is_under compares plain paths as strings: the keys ask this
        // for every header.
        if (!path_is_under(dep, search_dirs[i])) continue;
        const fs::path rel = dep.lexically_relative(search_dirs[i].lexically_normal());
        std::vector<fs::path> out;
        auto add = [&](const fs::path& d) {
            fs::path c = (d / rel).lexically_normal();
            if (c != dep) out.push_back(std::move(c));
        };
        for (const auto& d : quoted_dirs) add(d);
        for (size_t j = 0; j < i; ++j) add(search_dirs[j]);
        return out;
    }
    return {};
}

DirectLookup check_direct_file(const CacheDir& cache, const fs::path& file,
                               std::chrono::nanoseconds racy_window, const BaseDir& base) {
    DirectLookup result;
    int64_t check_ns = now_ns();  // before any stat, like a record's written_ns
    std::vector<DirectRecord> records = read_direct_records(cache, file);
    if (records.empty()) {
        result.why_not = "no direct-mode record";
        return result;
    }
    HashMemo memo;
    AbsentMemo absent;
    for (auto& record : records) {
        auto checked =
            check_record(record, memo, absent, check_ns, racy_window, result.rehashed, base);
        if (!checked) {
            if (result.why_not.empty()) result.why_not = checked.error().message;
            continue;
        }
        if (*checked) {
            record.written_ns = check_ns;
            (void)write_direct_records(cache, file, records);
        } else {
            cache.touch(file);  // for prune's least-recently-used order
        }
        result.key = record.key;
        result.why_not.clear();
        return result;
    }
    return result;
}

std::expected<void, Error> add_direct_record(const CacheDir& cache, const fs::path& file,
                                             const DirectInputs& inputs, const BaseDir& base) {
    int64_t written_ns = now_ns();
    if (inputs.examined_ns != 0) written_ns = std::min(written_ns, inputs.examined_ns);
    DirectRecord record{inputs.key, written_ns, {}, {}};
    // Paths under the base directory are recorded relative to it; a record
    // from another checkout (a remote one) names them so already.
    auto here = [&](const fs::path& p) -> std::expected<fs::path, Error> {
        auto path = base.show(p.string());
        if (!path)
            return fail(ErrorKind::Cache,
                        p.string() + " is under a base directory, and none is set");
        return fs::path(*path);
    };
    for (const auto& dep : inputs.dependencies) {
        auto path = here(dep.path);
        if (!path) return std::unexpected(path.error());
        if (dep.stat && !dep.xxh128.empty()) {
            record.files.push_back({base.hide(path->string()), *dep.stat, dep.xxh128});
            continue;
        }
        auto recorded = fingerprint({*path, dep.sha256});
        if (!recorded) return std::unexpected(recorded.error());
        recorded->path = base.hide(recorded->path);
        record.files.push_back(std::move(*recorded));
    }
    for (const auto& p : inputs.must_not_exist) {
        auto path = here(p);
        if (!path) return std::unexpected(path.error());
        if (path_exists(path->string())) {
            return fail(ErrorKind::Cache,
                        path->string() + " exists, so it cannot be recorded as absent");
        }
        record.absent.push_back(base.hide(path->string()));
    }
    std::vector<DirectRecord> records = read_direct_records(cache, file);
    std::erase_if(records, [&](const DirectRecord& r) { return r.key == inputs.key; });
    records.insert(records.begin(), std::move(record));
    if (records.size() > kMaxDirectRecords) records.resize(kMaxDirectRecords);
    return write_direct_records(cache, file, records);
}

bool direct_file_is_valid(const CacheDir& cache, const fs::path& file) {
    return !read_direct_records(cache, file).empty();
}

}  // namespace bekc
