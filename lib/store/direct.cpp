#include "store/direct.hpp"

#include <sys/stat.h>

#include <cerrno>

#include <algorithm>
#include <map>
#include <set>

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
        if (slash != std::string::npos && slash > 0 &&
            dir_missing(std::string_view(path).substr(0, slash)))
            return false;
        return path_exists(path);
    }

  private:
    bool dir_missing(std::string_view dir) {
        auto it = dir_missing_.find(dir);
        if (it != dir_missing_.end()) return it->second;
        std::string owned(dir);
        struct stat st;
        bool missing = lstat(owned.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
        dir_missing_.emplace(std::move(owned), missing);
        return missing;
    }

    std::map<std::string, bool, std::less<>> dir_missing_;
};

// The directories records stamp, and their entries on the way to absent
// paths, as one lookup finds them: each lstat'ed once.
class DirMemo {
  public:
    const std::optional<DirStamp>& now(const std::string& dir) {
        auto it = dirs_.find(dir);
        if (it == dirs_.end()) it = dirs_.emplace(dir, dir_stamp(dir.c_str())).first;
        return it->second;
    }

    bool entry_absent(std::string_view entry) {
        auto it = entries_.find(entry);
        if (it != entries_.end()) return it->second;
        std::string owned(entry);
        bool absent = !path_exists(owned);
        entries_.emplace(std::move(owned), absent);
        return absent;
    }

  private:
    std::map<std::string, std::optional<DirStamp>, std::less<>> dirs_;
    std::map<std::string, bool, std::less<>> entries_;
};

// The longest of `dirs` that holds `path` below it, or npos.
size_t covering_dir(std::string_view path,
                    const std::map<std::string_view, size_t, std::less<>>& dirs) {
    for (size_t slash = path.rfind('/'); slash != std::string_view::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
        auto it = dirs.find(path.substr(0, slash));
        if (it != dirs.end()) return it->second;
    }
    return std::string_view::npos;
}

// The entry of the directory `dir_size` characters long on the way to `path`.
std::string_view entry_toward(std::string_view path, size_t dir_size) {
    return path.substr(0, path.find('/', dir_size + 1));
}

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

// A recorded path under the base directory in force; others as recorded,
// without a copy (a hit checks hundreds).
class Shown {
  public:
    explicit Shown(const BaseDir& base) : base_(base) {}

    std::expected<const std::string*, Error> operator()(const std::string& recorded) {
        if (!recorded.starts_with(BaseDir::kToken)) return &recorded;
        auto path = base_.show(recorded);
        if (!path)
            return fail(ErrorKind::Cache, recorded + " is under a base directory, and none is set");
        shown_ = std::move(*path);
        return &shown_;
    }

  private:
    const BaseDir& base_;
    std::string shown_;
};

struct AbsentCheck {
    AbsentMemo& paths;
    DirMemo& dirs;
    size_t& checked;  // paths lstat'ed one by one
};

// That the record's absent paths are still absent (store/direct.hpp): by
// their directory's stamp where it holds, else by the directory's entry on
// the way, else by their own lstat. The stamps to record again: those of
// directories whose every path was found absent after the stamp was taken.
std::expected<std::vector<std::pair<size_t, DirStamp>>, Error> check_absent(
    const DirectRecord& record, AbsentCheck check, std::chrono::nanoseconds window,
    const BaseDir& base) {
    std::vector<std::string> dirs;
    for (const auto& d : record.absent_dirs) {
        auto path = Shown(base)(d.path);
        if (!path) return std::unexpected(path.error());
        dirs.push_back(**path);
    }
    std::map<std::string_view, size_t, std::less<>> index;
    for (size_t i = 0; i < dirs.size(); ++i) index.emplace(dirs[i], i);
    enum class State : char { Unseen, Holds, Entries, Unusable };
    std::vector<State> state(dirs.size(), State::Unseen);
    Shown here(base);
    for (const auto& recorded : record.absent) {
        auto shown = here(recorded);
        if (!shown) return std::unexpected(shown.error());
        const std::string& path = **shown;
        size_t d = covering_dir(path, index);
        if (d != std::string_view::npos && state[d] == State::Unseen) {
            const auto& now = check.dirs.now(dirs[d]);
            if (!now)
                state[d] = State::Unusable;
            else if (stamp_holds(record.absent_dirs[d].stamp, *now, record.written_ns, window))
                state[d] = State::Holds;
            else
                state[d] = State::Entries;
        }
        if (d != std::string_view::npos && state[d] == State::Holds) continue;
        ++check.checked;
        if (d != std::string_view::npos && state[d] == State::Entries) {
            if (check.dirs.entry_absent(entry_toward(path, dirs[d].size()))) continue;
            state[d] = State::Unusable;
        }
        if (check.paths.exists(path))
            return fail(ErrorKind::Cache, path + " now exists and shadows a header");
    }
    std::vector<std::pair<size_t, DirStamp>> again;
    for (size_t d = 0; d < dirs.size(); ++d)
        if (state[d] == State::Entries) again.emplace_back(d, *check.dirs.now(dirs[d]));
    return again;
}

// Checks one record; on success updates stale stats and stamps in place and
// says whether rewriting the record would spare the next lookup some work.
std::expected<bool, Error> check_record(DirectRecord& record, HashMemo& memo, AbsentCheck absent,
                                        int64_t check_ns, std::chrono::nanoseconds window,
                                        size_t& rehashed, const BaseDir& base) {
    auto stamps = check_absent(record, absent, window, base);
    if (!stamps) return std::unexpected(stamps.error());
    Shown here(base);
    bool worth_refreshing = false;
    for (auto& file : record.files) {
        auto found = here(file.path);
        if (!found) return std::unexpected(found.error());
        const std::string& path = **found;
        struct stat st;
        if (::stat(path.c_str(), &st) != 0)
            return fail(ErrorKind::Cache, path + " no longer exists");
        std::optional<FileStat> now = file_stat_of(st);
        if (!must_rehash(file.stat, *now, record.written_ns, window)) continue;
        auto hash = memo.xxh128(path, *now, rehashed);
        if (!hash || *hash != file.xxh128) return fail(ErrorKind::Cache, path + " changed");
        file.stat = *now;
        worth_refreshing |= !must_rehash(*now, *now, check_ns, window);
    }
    for (const auto& [d, stamp] : *stamps) {
        record.absent_dirs[d].stamp = stamp;
        worth_refreshing |= stamp_holds(stamp, stamp, check_ns, window);
    }
    return worth_refreshing;
}

// Where the walk up from `path` stops: its nearest ancestor that lstat finds
// (a link or a file included), or the first one lstat cannot tell missing;
// nullopt at "/".
std::optional<std::string> nearest_existing(std::string_view path) {
    for (size_t slash = path.rfind('/'); slash != std::string_view::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
        std::string dir(path.substr(0, slash));
        struct stat st;
        if (lstat(dir.c_str(), &st) == 0 || errno != ENOENT) return dir;
    }
    return std::nullopt;
}

// The stamps of the directories `absent` (paths as checked) lie in, for the
// lookup to take them as absent while a stamp holds (store/direct.hpp). Each
// path's nearest existing directory is recorded, so that no directory above
// it answers for the path; with a zero stamp (no directory has inode 0, so it
// never holds) where it is no directory or its entry toward one of its paths
// is present. Every stamp
// is taken before any path's entry is checked against it.
std::vector<StampedDir> stamp_absent_dirs(const std::vector<std::string>& absent) {
    std::vector<StampedDir> dirs;
    std::map<std::string_view, size_t, std::less<>> index;
    std::vector<std::string> nearest;
    for (const auto& path : absent)
        if (auto dir = nearest_existing(path)) nearest.push_back(std::move(*dir));
    std::set<std::string_view> seen;
    for (const auto& dir : nearest)
        if (seen.insert(dir).second)
            dirs.push_back({dir, dir_stamp(dir.c_str()).value_or(DirStamp{})});
    for (size_t i = 0; i < dirs.size(); ++i) index.emplace(dirs[i].path, i);
    for (const auto& path : absent) {
        size_t d = covering_dir(path, index);
        if (d != std::string_view::npos &&
            path_exists(std::string(entry_toward(path, dirs[d].path.size()))))
            dirs[d].stamp = DirStamp{};
    }
    return dirs;
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

bool stamp_holds(const DirStamp& recorded, const DirStamp& now, int64_t record_ns,
                 std::chrono::nanoseconds racy_window) {
    return recorded == now &&
           std::max(now.mtime_ns, now.ctime_ns) < record_ns - racy_window.count();
}

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
    DirMemo dirs;
    for (auto& record : records) {
        auto checked = check_record(record, memo, {absent, dirs, result.absent_checked}, check_ns,
                                    racy_window, result.rehashed, base);
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
    std::vector<std::string> absent;
    for (const auto& p : inputs.must_not_exist) {
        auto path = here(p);
        if (!path) return std::unexpected(path.error());
        if (path_exists(path->string())) {
            return fail(ErrorKind::Cache,
                        path->string() + " exists, so it cannot be recorded as absent");
        }
        absent.push_back(path->string());
        record.absent.push_back(base.hide(path->string()));
    }
    for (auto& d : stamp_absent_dirs(absent))
        record.absent_dirs.push_back({base.hide(d.path), d.stamp});
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
