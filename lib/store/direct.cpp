#include "store/direct.hpp"

#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "store/direct_record.hpp"
#include "store/hash.hpp"

namespace bekc {

namespace {

// record_ns less the racy window, or the earliest time where that is
// earlier (a record's time is read from its file).
int64_t window_start(int64_t record_ns, std::chrono::nanoseconds racy_window) {
    int64_t w = racy_window.count();
    return record_ns < std::numeric_limits<int64_t>::min() + w ? std::numeric_limits<int64_t>::min()
                                                               : record_ns - w;
}

bool path_exists(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;  // a dangling symlink shadows too
}

// What one lookup learns of the paths its records list as absent and of the
// directories they stamp, each lstat'ed once. A record lists a header under
// every earlier search directory, and many of those are under directories
// that do not exist (<inc>/bits): a directory that lstat says is not there
// (or is no directory) holds none of them, so its paths need no lstat of
// their own.
class PathMemo {
  public:
    bool exists(std::string_view path) {
        size_t slash = path.rfind('/');
        if (slash != std::string_view::npos && slash > 0) {
            int dir = lstat_errno(path.substr(0, slash));
            if (dir == ENOENT || dir == ENOTDIR) return false;
        }
        return lstat_errno(path) == 0;  // a dangling symlink shadows too
    }

    const std::optional<DirStamp>& stamp(const std::string& dir) {
        auto it = stamps_.find(dir);
        if (it == stamps_.end()) it = stamps_.emplace(dir, dir_stamp(dir.c_str())).first;
        return it->second;
    }

  private:
    // 0, or the errno lstat failed with.
    int lstat_errno(std::string_view path) {
        auto it = lstats_.find(path);
        if (it != lstats_.end()) return it->second;
        std::string owned(path);
        struct stat st;
        int result = lstat(owned.c_str(), &st) == 0 ? 0 : errno;
        lstats_.emplace(std::move(owned), result);
        return result;
    }

    std::map<std::string, int, std::less<>> lstats_;
    std::map<std::string, std::optional<DirStamp>, std::less<>> stamps_;
};

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
    PathMemo& paths;
    size_t& checked;  // paths lstat'ed one by one
};

// That the record's absent paths are still absent (store/direct.hpp): those
// listed whole by their own lstat; those of a directory by its stamp where it
// holds, else by the directory's entry on the way to each, else by their own
// lstat. The stamps to record for the directories whose stamp did not hold:
// the one found now where it is a directory and every entry toward its paths
// was found absent after it, else one that never holds (no directory has
// inode 0): a rewritten record's later time must not make the old stamp hold.
std::expected<std::vector<std::pair<size_t, DirStamp>>, Error> check_absent(
    const DirectRecord& record, AbsentCheck check, std::chrono::nanoseconds window,
    const BaseDir& base) {
    Shown here(base);
    for (const auto& recorded : record.absent) {
        auto shown = here(recorded);
        if (!shown) return std::unexpected(shown.error());
        ++check.checked;
        if (check.paths.exists(**shown))
            return fail(ErrorKind::Cache, **shown + " now exists and shadows a header");
    }
    std::vector<std::pair<size_t, DirStamp>> again;
    for (size_t d = 0; d < record.absent_dirs.size(); ++d) {
        const AbsentDir& group = record.absent_dirs[d];
        auto shown = here(group.dir);
        if (!shown) return std::unexpected(shown.error());
        const std::string dir = **shown;
        const auto& now = check.paths.stamp(dir);
        if (now && stamp_holds(group.stamp, *now, record.written_ns, window)) continue;
        bool entries_absent = true;
        for (const auto& name : group.names) {
            std::string path = dir + "/" + name;
            ++check.checked;
            if (!check.paths.exists(entry_toward(path, dir.size()))) continue;
            entries_absent = false;
            if (check.paths.exists(path))
                return fail(ErrorKind::Cache, path + " now exists and shadows a header");
        }
        again.emplace_back(d, now && entries_absent ? *now : DirStamp{});
    }
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
        const FileStat now = file_stat_of(st);
        if (!must_rehash(file.stat, now, record.written_ns, window)) continue;
        auto hash = memo.xxh128(path, now, rehashed);
        if (!hash || *hash != file.xxh128) return fail(ErrorKind::Cache, path + " changed");
        file.stat = now;
        worth_refreshing |= !must_rehash(now, now, check_ns, window);
    }
    for (const auto& [d, stamp] : *stamps) {
        record.absent_dirs[d].stamp = stamp;
        // A stamp that never holds is no reason to write: it matters only
        // once something else moves the record's time.
        worth_refreshing |= stamp != DirStamp{} && stamp_holds(stamp, stamp, check_ns, window);
    }
    return worth_refreshing;
}

struct StampedDir {
    std::string path;
    DirStamp stamp;
};

// The nearest existing directory above `path` (lstat, so a link in its
// place is none) and its stamp from that lstat, or nullopt: none below "/",
// or one lstat cannot tell about.
std::optional<StampedDir> nearest_dir(std::string_view path) {
    for (size_t slash = path.rfind('/'); slash != std::string_view::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
        std::string dir(path.substr(0, slash));
        struct stat st;
        if (lstat(dir.c_str(), &st) == 0) {
            auto stamp = dir_stamp_of(st);
            if (!stamp) return std::nullopt;
            return StampedDir{std::move(dir), *stamp};
        }
        if (errno != ENOENT) return std::nullopt;
    }
    return std::nullopt;
}

// `absent` (paths as checked) grouped under their nearest existing
// directories with their stamps (store/direct.hpp): every stamp is taken
// before any entry toward a path is checked. A path is left to be checked
// whole (the second of the pair) where it has no such directory, its
// directory's file system does not keep directory times, its entry there
// exists, or its name below the directory is not a plain one ("a/../b").
std::pair<std::vector<AbsentDir>, std::vector<std::string>> group_absent(
    const std::vector<std::string>& absent) {
    std::vector<AbsentDir> dirs;
    std::vector<std::string> whole;
    std::map<std::string, size_t, std::less<>> index;
    std::vector<std::pair<size_t, const std::string*>> grouped;
    for (const auto& path : absent) {
        std::optional<StampedDir> dir = nearest_dir(path);
        auto it = dir ? index.find(dir->path) : index.end();
        if (dir && it == index.end() && keeps_dir_times(dir->path)) {
            it = index.emplace(dir->path, dirs.size()).first;
            dirs.push_back({dir->path, dir->stamp, {}});
        }
        if (it == index.end())
            whole.push_back(path);
        else
            grouped.emplace_back(it->second, &path);
    }
    for (const auto& [d, path] : grouped) {
        size_t size = dirs[d].dir.size();
        std::string name = path->substr(size + 1);
        if (!is_name_below(name) || path_exists(std::string(entry_toward(*path, size))))
            whole.push_back(*path);
        else
            dirs[d].names.push_back(std::move(name));
    }
    std::erase_if(dirs, [](const AbsentDir& d) { return d.names.empty(); });
    return {std::move(dirs), std::move(whole)};
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
           std::max(now.mtime_ns, now.ctime_ns) < window_start(record_ns, racy_window);
}

bool must_rehash(const FileStat& recorded, const FileStat& now, int64_t record_ns,
                 std::chrono::nanoseconds racy_window) {
    if (recorded != now) return true;
    return std::max(now.mtime_ns, now.ctime_ns) >= window_start(record_ns, racy_window);
}

bool keeps_dir_times(const std::string& dir) {
    struct statfs fs;
    if (::statfs(dir.c_str(), &fs) != 0) return false;
    switch (static_cast<uint64_t>(fs.f_type)) {
        case 0xEF53:      // ext2, ext3, ext4
        case 0x58465342:  // xfs
        case 0x9123683E:  // btrfs
        case 0x01021994:  // tmpfs
        case 0x794C7630:  // overlayfs
        case 0x2FC12FC2:  // zfs
        case 0xF2F52010:  // f2fs
            return true;
        default:
            return false;
    }
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
                               std::chrono::nanoseconds racy_window, const BaseDir& base,
                               const AcceptKey& accept) {
    DirectLookup result;
    int64_t check_ns = now_ns();  // before any stat, like a record's written_ns
    std::vector<DirectRecord> records = read_direct_records(cache, file);
    if (records.empty()) {
        result.why_not = "no direct-mode record";
        return result;
    }
    HashMemo memo;
    PathMemo paths;
    for (auto& record : records) {
        auto checked = check_record(record, memo, {paths, result.absent_checked}, check_ns,
                                    racy_window, result.rehashed, base);
        if (!checked) {
            if (result.why_not.empty()) result.why_not = checked.error().message;
            continue;
        }
        if (accept && !accept(record.key)) continue;
        if (cache.read_only()) {
            // A read-only layer's record is used as it is: its racy files
            // and stale stamps cost a hash each time, never a write.
        } else if (*checked) {
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
    }
    auto [dirs, whole] = group_absent(absent);
    for (const auto& path : whole) record.absent.push_back(base.hide(path));
    for (auto& d : dirs) {
        d.dir = base.hide(d.dir);
        record.absent_dirs.push_back(std::move(d));
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
