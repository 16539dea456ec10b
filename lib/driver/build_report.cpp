#include "driver/build_report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <optional>

#include "prep/inputs.hpp"
#include "store/build_history.hpp"
#include "store/cache.hpp"
#include "store/cache_layers.hpp"
#include "store/stats.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/utc_time.hpp"

namespace bekc {

namespace {

// The changed parts a report lists; a changed list of flags shifts every
// later item, so the rest is only counted.
constexpr size_t kMaxChangesShown = 16;

// Same module name + same input paths: the builds a miss is compared with.
struct Identity {
    std::string module;
    std::vector<std::string> inputs;
};

Identity identity_of(const BuildOptions& o) {
    // Inputs that cannot be expanded (the build failed on them) stand for
    // themselves.
    std::vector<fs::path> files =
        expand_inputs(o.inputs).value_or(std::vector<fs::path>(o.inputs.begin(), o.inputs.end()));
    Identity id;
    for (const auto& f : files) id.inputs.push_back(physical_normal(f).string());
    id.module = !o.name.empty() ? o.name : files.empty() ? "" : files.front().stem().string();
    return id;
}

// The build's own cache (store/cache_layers.hpp), when it exists and is
// bekc's: a hit from a read-only cache is counted there too.
std::optional<Cache> cache_of(const BuildOptions& o, const EnvLookup& settings) {
    auto own = resolve_own_cache(o.cache_dir, settings);
    if (!own) return std::nullopt;
    std::optional<Cache> cache;
    cache.emplace(own->root);
    auto ok = cache->is_cache();
    if (!ok || !*ok) return std::nullopt;
    return cache;
}

nlohmann::ordered_json changes_json(const std::vector<KeyChange>& changes) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < changes.size() && i < kMaxChangesShown; ++i)
        out.push_back({{"part", changes[i].part},
                       {"old", changes[i].old_value},
                       {"new", changes[i].new_value}});
    return out;
}

std::string result_of(const BuildResult* r) {
    if (!r) return "error";
    if (r->remote_hit) return "remote_hit";
    return r->cache_hit ? "hit" : "miss";
}

// One write(2) with O_APPEND, so concurrent builds' lines do not interleave.
// Opened without blocking: a FIFO nobody reads is an error, not a hang. A log
// inside the cache is reached like every file there (store/cache_dir.hpp):
// no link below the root is followed, and it must be a regular file, so a
// member of a shared cache cannot point other users' logs elsewhere. Outside
// the cache the path is the user's, but a link as its last component is not
// followed either.
std::expected<void, Error> append_line(const fs::path& path, const std::string& line,
                                       const std::optional<fs::path>& cache_root) {
    fs::path log = fs::absolute(path).lexically_normal();
    if (cache_root) {
        fs::path root = fs::absolute(*cache_root).lexically_normal();
        if (path_is_under(log, root) && log != root) {
            auto appended = CacheDir(root).append(log.lexically_relative(root), line);
            if (!appended) return std::unexpected(std::move(appended.error()));
            return {};
        }
    }
    int fd = ::open(log.c_str(),
                    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW,
                    0666);
    if (fd < 0) return fail(ErrorKind::Cache, errno_message("open", log, errno));
    ssize_t n = ::write(fd, line.data(), line.size());
    int err = errno;
    bool closed = ::close(fd) == 0;
    if (n != static_cast<ssize_t>(line.size()))
        return fail(ErrorKind::Cache, errno_message("write", log, n < 0 ? err : EIO));
    if (!closed) return fail(ErrorKind::Cache, errno_message("write", log, errno));
    return {};
}

// A log inside a read-only cache: bekc never writes one.
std::expected<void, Error> refuse_read_only_log(const fs::path& path, const BuildOptions& o,
                                                const EnvLookup& settings,
                                                const std::optional<fs::path>& demoted) {
    fs::path log = fs::absolute(path).lexically_normal();
    std::vector<fs::path> read_only =
        named_read_only_caches(o.read_only_caches, settings, fs::current_path());
    if (demoted) read_only.push_back(*demoted);
    for (const fs::path& layer : read_only)
        if (path_is_under(log, layer.lexically_normal()))
            return fail(ErrorKind::Cache, log.string() + " is in the read-only cache " +
                                              layer.string() +
                                              ", which bekc never writes; log elsewhere");
    return {};
}

}  // namespace

nlohmann::ordered_json account_build(const BuildOptions& o, const BuildResult& r,
                                     const EnvLookup& settings) {
    const bool local_hit = r.cache_hit && !r.remote_hit;
    nlohmann::ordered_json why = nullptr;
    if (!local_hit)
        why = {{"reason", r.miss_reason.empty() && o.force ? "--force" : r.miss_reason},
               {"previous_build", false},
               {"changed", nlohmann::ordered_json::array()}};
    auto cache = cache_of(o, settings);
    if (!cache) return why;
    (void)count_build(cache->dir(), local_hit      ? BuildCount::LocalHit
                                    : r.remote_hit ? BuildCount::RemoteHit
                                                   : BuildCount::Miss);
    if (r.direct_key_record.empty()) return why;
    Identity id = identity_of(o);
    std::string history = inputs_id(id.module, id.inputs);
    // A hit only marks the record used (for prune): the next miss says what
    // changed since the last build that compiled these inputs.
    if (local_hit) {
        cache->dir().touch(CacheLayout::history_record(history));
        return why;
    }
    auto before = previous_record(cache->dir(), history);
    remember_record(cache->dir(), history, r.direct_key_record, before);
    if (!before) return why;
    auto changes = changed_parts(*before, r.direct_key_record);
    why["previous_build"] = true;
    why["changed"] = changes_json(changes);
    if (changes.size() > kMaxChangesShown) why["more_changed"] = changes.size() - kMaxChangesShown;
    return why;
}

void account_failure(const BuildOptions& o, const EnvLookup& settings) {
    if (auto cache = cache_of(o, settings)) (void)count_build(cache->dir(), BuildCount::Error);
}

std::expected<void, Error> log_build(const BuildOptions& o, const BuildResult* r,
                                     const nlohmann::ordered_json& why, int exit_code,
                                     double seconds, const EnvLookup& settings) {
    auto path = settings("BEKC_LOG");
    if (!path) return {};
    Identity id = identity_of(o);
    nlohmann::ordered_json line = {
        {"time", utc_time(std::time(nullptr))},
        {"module", id.module},
        {"inputs", id.inputs},
        {"result", result_of(r)},
        {"exit_code", exit_code},
        {"seconds_total", r ? r->seconds_total : seconds},
        {"seconds_compile", r ? r->seconds_compile : 0.0},
        {"direct_key", r ? r->direct_key : ""},
        {"manifest", r ? r->manifest.string() : ""},
        {"why", why},
    };
    std::string text = dump_json(line) + "\n";
    std::optional<fs::path> cache_root;
    if (auto own = resolve_own_cache(o.cache_dir, settings)) {
        cache_root = own->root;
        if (auto refused = refuse_read_only_log(*path, o, settings, own->demoted); !refused)
            return refused;
    }
    return append_line(*path, text, cache_root);
}

nlohmann::ordered_json report_build(const BuildOptions& o, const BuildResult& r,
                                    const EnvLookup& settings, const Reporter& report) {
    nlohmann::ordered_json why = account_build(o, r, settings);
    if (auto logged = log_build(o, &r, why, kExitOk, r.seconds_total, settings); !logged)
        report.warn("build log: " + logged.error().message);
    nlohmann::ordered_json j = {
        {"manifest", r.manifest.string()},
        {"library", r.library.string()},
        {"cache_hit", r.cache_hit},
        {"remote_hit", r.remote_hit},
        {"targets", r.targets},
        {"timings", {{"total_s", r.seconds_total}, {"compile_s", r.seconds_compile}}},
    };
    j["key"] = r.key;
    j["portable_key"] = r.portable_key;
    if (!r.layer.empty()) j["layer"] = r.layer.string();
    if (!r.checked.empty()) j["checked"] = r.checked;
    if (!r.cache_hit) j["miss_reason"] = r.miss_reason;
    j["why"] = why;
    return j;
}

}  // namespace bekc
