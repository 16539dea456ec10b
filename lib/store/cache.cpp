#include "store/cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/size.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// https://bford.info/cachedir/: backup and indexing tools skip the tree.
constexpr std::string_view kCacheDirTag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by bekc.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

// Runs `undo` when it goes out of scope: a staging directory goes whichever
// way get_or_build or ensure_tree leaves, a builder's FatalError included, so
// nothing half-built stays behind. (Once published, the directory is gone
// from tmp/ and there is nothing left to remove.)
template <typename Undo>
class OnExit {
  public:
    explicit OnExit(Undo undo) : undo_(std::move(undo)) {}
    OnExit(const OnExit&) = delete;
    OnExit& operator=(const OnExit&) = delete;
    ~OnExit() { undo_(); }

  private:
    Undo undo_;
};

nlohmann::json read_marker(const CacheDir& dir) {
    auto text = dir.read(kMarkerFile, 1 << 16);
    if (!text) return nullptr;
    auto j = parse_json(*text).value_or(nullptr);
    if (!j.is_object()) return nullptr;
    // Not j.value("bekc_cache", 0): it throws when the member is not a number.
    auto it = j.find("bekc_cache");
    return it != j.end() && it->is_number_integer() && *it == 1 ? j : nlohmann::json(nullptr);
}

}  // namespace

std::expected<void, Error> Staging::write(const fs::path& name, std::string_view content) const {
    return dir_.write(rel_ / name, content);
}

std::expected<void, Error> Staging::move_in(const std::string& name, const fs::path& source) const {
    auto target = dir_.open_dir(rel_);
    if (!target) return std::unexpected(target.error());
    if (::renameat(AT_FDCWD, source.c_str(), target->get(), name.c_str()) == 0) return {};
    if (errno != EXDEV) return fail(ErrorKind::Cache, errno_message("move", source, errno));
    // Another filesystem: copy into a fresh file (O_EXCL, so never through a link).
    auto in = open_regular_at(AT_FDCWD, source, source, ReadOptions{UINT64_MAX, true});
    if (!in) return std::unexpected(in.error());
    fs::path shown = path() / name;
    UniqueFd out(::openat(target->get(), name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
    if (!out.valid()) return fail(ErrorKind::Cache, errno_message("write", shown, errno));
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(in->get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(ErrorKind::Cache, errno_message("read", source, errno));
        if (n == 0) break;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = ::write(out.get(), buf + done, static_cast<size_t>(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) return fail(ErrorKind::Cache, errno_message("write", shown, errno));
            done += w;
        }
    }
    if (::close(out.release()) != 0)
        return fail(ErrorKind::Cache, errno_message("write", shown, errno));
    ::unlink(source.c_str());
    return {};
}

Cache::Cache(fs::path root, CacheOptions options, CacheAccess access)
    : layout_(std::move(root), access), options_(options) {}

std::expected<void, Error> Cache::ensure_created() const {
    if (dir().stat(kMarkerFile)) return {};
    if (auto root = dir().open_dir("", true); !root) return std::unexpected(root.error());
    if (auto known = is_cache(); known && *known) return {};  // an older bekc's cache
    // Only a directory that holds nothing of anyone else's becomes a cache:
    // bekc would overwrite a foreign tools.json or stats.json, and its
    // CACHEDIR.TAG makes backup tools skip the whole directory.
    auto foreign = foreign_name();
    // A build beside this one writes the marker before any other name: when
    // the listing saw one of those, the marker is there by now.
    if (!foreign.empty() && dir().stat(kMarkerFile)) return {};
    if (!foreign.empty())
        return fail(
            ErrorKind::Cache,
            fmt::format(
                "{} is not a bekc cache and is not empty (it holds '{}'): bekc creates its cache "
                "only in a missing or empty directory. Choose another directory with --cache-dir, "
                "$BEKC_CACHE_DIR or bekc.set_cache_dir(), or empty this one",
                path().string(), foreign));
    if (auto w = dir().write(kMarkerFile, "{\"bekc_cache\": 1}\n"); !w) return w;
    if (!dir().stat(kCacheDirTagFile)) (void)dir().write(kCacheDirTagFile, kCacheDirTag);
    return {};
}

std::string Cache::foreign_name() const {
    auto items = dir().list("");
    if (!items) return ".";  // unreadable: nothing proves it is empty
    const std::string marker_temp = std::string(kMarkerFile) + ".tmp.";
    for (const auto& item : *items) {
        // What a user or another bekc puts there before the first build: the
        // cache's bekc.conf, the Python loader's inline sources, the marker
        // being written by a build running beside this one.
        if (item.name == CacheLayout::config_file().string() && item.is_regular) continue;
        if (item.name.rfind(marker_temp, 0) == 0 && item.is_regular) continue;
        if (item.name == CacheLayout::inline_sources_dir().string() && item.is_dir) {
            auto sources = dir().list(item.name);
            if (sources && std::all_of(sources->begin(), sources->end(), [](const auto& s) {
                    return s.is_dir && CacheLayout::is_inline_source_name(s.name);
                }))
                continue;
        }
        return item.name;
    }
    return {};
}

std::expected<bool, Error> Cache::is_cache() const {
    auto root = dir().stat("");
    if (!root) return false;  // nothing there yet
    if (!read_marker(dir()).is_null()) return true;
    // Caches made before the marker existed carry bekc's CACHEDIR.TAG.
    auto tag = dir().read(kCacheDirTagFile, 4096);
    if (tag && tag->find("created by bekc") != std::string::npos) {
        (void)dir().write(kMarkerFile, "{\"bekc_cache\": 1}\n");
        return true;
    }
    return fail(
        ErrorKind::Cache,
        fmt::format(
            "{} is not a bekc cache (it has no {}); bekc maintains only directories it created",
            path().string(), kMarkerFile));
}

std::expected<Entry, Miss> Cache::probe(std::string_view key) const {
    fs::path rel = CacheLayout::entry(key);
    if (!dir().stat(rel)) return std::unexpected(Miss{Miss::Kind::Absent, "not in the cache"});
    auto entry = check_entry(dir(), rel, key, CheckLevel::Cheap);
    if (!entry) {
        return std::unexpected(Miss{
            Miss::Kind::Corrupt, fmt::format("cache entry {} is corrupt: {}",
                                             layout_.path(rel).string(), entry.error().message)});
    }
    return *entry;
}

std::expected<Entry, Miss> Cache::lookup(std::string_view key, bool repair) {
    auto entry = probe(key);
    if (read_only()) return entry;  // a damaged entry stays, and nothing is marked
    if (repair && !entry && entry.error().kind == Miss::Kind::Corrupt) {
        // Only remove it while holding the key's lock: a builder holding it
        // may be replacing this very entry, and will remove it itself.
        if (auto lock = FileLock::try_acquire(dir(), CacheLayout::lock(key))) {
            auto again = probe(key);
            if (!again && again.error().kind == Miss::Kind::Corrupt)
                (void)discard(CacheLayout::entry(key));
            if (again) entry = std::move(again);
        }
    }
    if (entry) dir().touch(CacheLayout::entry(key) / kLastUseFile);
    return entry;
}

std::expected<FileLock, Error> Cache::lock(const fs::path& rel) const {
    if (auto made = ensure_created(); !made) return std::unexpected(made.error());
    return FileLock::acquire(dir(), rel, options_.lock_timeout);
}

std::expected<BuildOutcome, Error> Cache::get_or_build(std::string_view key, const Builder& build,
                                                       bool replace) {
    std::string repaired;
    if (!replace) {
        auto first = lookup(key);
        if (first) return BuildOutcome{*first, true, "", std::nullopt};
        if (first.error().kind == Miss::Kind::Corrupt) repaired = first.error().reason;
    }
    auto lock = this->lock(CacheLayout::lock(key));
    if (!lock) return std::unexpected(lock.error());
    // Whoever held the lock before us may have published this key.
    auto again = probe(key);
    std::optional<std::string> replaced_sha256;
    if (again && !replace) {
        dir().touch(CacheLayout::entry(key) / kLastUseFile);
        return BuildOutcome{*again, true, repaired, std::nullopt};
    }
    if (again) {
        // What the seal holds, which the check above tied to the file.
        replaced_sha256 = again->library_sha256;
    } else if (again.error().kind == Miss::Kind::Corrupt) {
        repaired = again.error().reason;
    }
    auto staging = make_staging(key);
    if (!staging) return std::unexpected(staging.error());
    OnExit remove_staging([&] { (void)discard(*staging); });
    if (auto built = build(Staging(dir(), *staging)); !built) return std::unexpected(built.error());
    // Replacing (a corrupt entry, or --force): out of the way first, while
    // holding the key's lock.
    if (replace || !repaired.empty())
        if (auto d = discard(CacheLayout::entry(key)); !d) return std::unexpected(d.error());
    auto entry = publish(*staging, key);
    if (!entry) return std::unexpected(entry.error());
    return BuildOutcome{*entry, false, repaired, replaced_sha256};
}

std::expected<fs::path, Error> Cache::make_staging(std::string_view what) const {
    if (auto made = ensure_created(); !made) return std::unexpected(made.error());
    fs::path rel = CacheLayout::staging(what);
    if (auto made = dir().make_dir(rel); !made) return std::unexpected(made.error());
    return rel;
}

// The caller removes `staging` when this fails.
std::expected<Entry, Error> Cache::publish(const fs::path& staging, std::string_view key) {
    auto sealed = seal_entry(dir(), staging, key);
    if (!sealed)
        return std::unexpected(
            std::move(sealed.error().within("the build left an invalid cache entry")));
    fs::path target = CacheLayout::entry(key);
    Error failure;
    for (int attempt = 0; attempt < 3; ++attempt) {
        auto moved = dir().rename(staging, target);
        if (moved) {
            Entry entry = *sealed;
            entry.dir = layout_.path(target);
            entry.library = entry.dir / sealed->library.filename();
            return entry;
        }
        failure = std::move(moved.error());
        auto st = dir().stat(target);
        if (!st) break;
        // Someone published first; without working locks that can happen.
        auto theirs = check_entry(dir(), target, key, CheckLevel::Cheap);
        if (theirs) return *theirs;
        (void)discard(target);
    }
    return std::unexpected(std::move(failure));
}

std::expected<void, Error> Cache::discard(const fs::path& rel) const {
    fs::path doomed = rel;
    if (rel.parent_path() != CacheLayout::tmp()) {
        if (!dir().stat(rel)) return {};  // already gone
        fs::path trash = CacheLayout::trash();
        auto moved = dir().rename(rel, trash);
        if (!moved) return moved;
        doomed = trash;
    }
    return dir().remove_tree(doomed);
}

bool Cache::tree_ready(const fs::path& rel) const {
    return static_cast<bool>(check_seal(dir(), rel, CheckLevel::Cheap));
}

std::expected<fs::path, Error> Cache::ensure_tree(const fs::path& rel, const fs::path& lock_rel,
                                                  const Builder& build, bool replace) {
    if (!replace && check_seal(dir(), rel, CheckLevel::Cheap)) return layout_.path(rel);
    auto lock = this->lock(lock_rel);
    if (!lock) return std::unexpected(lock.error());
    if (!replace && check_seal(dir(), rel, CheckLevel::Cheap))
        return layout_.path(rel);  // built meanwhile
    auto staging = make_staging("runtime");
    if (!staging) return std::unexpected(staging.error());
    OnExit remove_staging([&] { (void)discard(*staging); });
    if (auto built = build(Staging(dir(), *staging)); !built) return std::unexpected(built.error());
    if (auto sealed = seal_dir(dir(), *staging, std::nullopt); !sealed)
        return std::unexpected(sealed.error());
    if (auto d = discard(rel); !d) return std::unexpected(d.error());  // a damaged or replaced one
    if (auto moved = dir().rename(*staging, rel); !moved) return std::unexpected(moved.error());
    return layout_.path(rel);
}

std::expected<fs::path, Error> Cache::make_scratch() const {
    auto staging = make_staging("scratch");
    if (!staging) return std::unexpected(staging.error());
    return layout_.path(*staging);
}

void Cache::remove(const fs::path& abs_inside) const {
    fs::path rel = abs_inside.lexically_relative(path());
    if (rel.empty() || *rel.begin() == ".." || rel.is_absolute()) return;
    (void)dir().remove_tree(rel);
}

std::optional<std::string> Cache::read_memo(const fs::path& rel) const {
    auto text = dir().read(rel, 1 << 20);
    if (!text) return std::nullopt;
    return std::move(*text);
}

void Cache::write_memo(const fs::path& rel, std::string_view text) const {
    if (ensure_created()) (void)dir().write(rel, text);
}

DirectLookup Cache::lookup_direct(std::string_view direct_key, const BaseDir& base) {
    return check_direct_file(dir(), CacheLayout::direct_record(direct_key), options_.racy_window,
                             base);
}

DirectLookup Cache::lookup_portable(std::string_view portable_key, const BaseDir& base,
                                    const AcceptKey& accept) {
    return check_direct_file(dir(), CacheLayout::portable_record(portable_key),
                             options_.racy_window, base, accept);
}

std::expected<void, Error> Cache::record_direct(std::string_view direct_key,
                                                const DirectInputs& inputs, const BaseDir& base) {
    return add_record(CacheLayout::direct_record(direct_key), inputs, base);
}

std::expected<void, Error> Cache::record_portable(std::string_view portable_key,
                                                  const DirectInputs& inputs, const BaseDir& base) {
    return add_record(CacheLayout::portable_record(portable_key), inputs, base);
}

std::expected<void, Error> Cache::add_record(const fs::path& rel, const DirectInputs& inputs,
                                             const BaseDir& base) {
    if (!is_valid_key(inputs.key)) return fail(ErrorKind::Cache, "not a cache key: " + inputs.key);
    if (auto made = ensure_created(); !made) return made;
    // A directory (or anything but a regular file) in the record's place
    // would fail every write: it goes first (a link itself, not its target).
    if (auto st = dir().stat(rel); st && !st->file.is_regular)
        if (auto gone = discard(rel); !gone) return gone;
    return add_direct_record(dir(), rel, inputs, base);
}

std::expected<SizeLimit, Error> Cache::size_limit(const EnvLookup& env) const {
    if (auto value = env("BEKC_CACHE_MAX_SIZE"); value && !value->empty()) {
        auto bytes = parse_size(*value);
        if (!bytes) return fail(ErrorKind::Cache, "$BEKC_CACHE_MAX_SIZE: " + bytes.error().message);
        return SizeLimit{*bytes, "BEKC_CACHE_MAX_SIZE"};
    }
    auto marker = read_marker(dir());
    if (marker.is_object() && marker.contains("max_size")) {
        auto& v = marker["max_size"];
        if (v.is_number_unsigned()) return SizeLimit{v.get<uint64_t>(), std::string(kMarkerFile)};
        return fail(ErrorKind::Cache, fmt::format("{}: max_size is not a byte count",
                                                  layout_.path(kMarkerFile).string()));
    }
    return SizeLimit{kDefaultMaxCacheSize, "default"};
}

std::expected<void, Error> Cache::store_pack_info(const nlohmann::json& info) const {
    if (auto made = ensure_created(); !made) return made;
    auto marker = read_marker(dir());
    if (!marker.is_object()) marker = {{"bekc_cache", 1}};
    marker["pack"] = info;
    return dir().write(kMarkerFile, dump_json(marker) + "\n");
}

std::expected<void, Error> Cache::store_size_limit(uint64_t bytes) const {
    if (auto made = ensure_created(); !made) return made;
    auto marker = read_marker(dir());
    if (!marker.is_object()) marker = {{"bekc_cache", 1}};
    marker["max_size"] = bytes;
    return dir().write(kMarkerFile, dump_json(marker) + "\n");
}

}  // namespace bekc
