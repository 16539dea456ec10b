#include "store/cache_layers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "store/cache.hpp"
#include "store/layout.hpp"
#include "util/text.hpp"
#include "util/version.hpp"

namespace bekc {

namespace {

// The default cache, as if cache_dir were not set.
std::expected<fs::path, Error> default_own_cache(const EnvLookup& env) {
    auto dir = default_cache_dir([&](std::string_view name) -> std::optional<std::string> {
        if (name == "BEKC_CACHE_DIR") return std::nullopt;
        return env(name);
    });
    if (!dir) return dir;
    return fs::absolute(*dir).lexically_normal();
}

// `dir` as the caches are compared and named: absolute, normal, without a
// trailing '/'.
fs::path plain_dir(const fs::path& dir) {
    fs::path out = dir.lexically_normal();
    return out.has_relative_path() && !out.has_filename() ? out.parent_path() : out;
}

}  // namespace

bool is_bekc_cache(const fs::path& root) {
    auto known = Cache(root, {}, CacheAccess::ReadOnly).is_cache();
    return known && *known;
}

std::string SkippedLayer::message() const {
    return fmt::format("{} {} skipped: {}", what, dir.string(), why);
}

bool read_only_here(const fs::path& root) {
    if (!is_bekc_cache(root)) return false;
    // A miss writes in the root (the counters, the memos) and below these.
    for (fs::path rel : {fs::path(), CacheLayout::locks(), CacheLayout::tmp(),
                         CacheLayout::entries(), CacheLayout::direct(), CacheLayout::portable()}) {
        fs::path dir = rel.empty() ? root : root / rel;
        if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0 && errno != ENOENT)
            return true;
    }
    return false;
}

std::expected<OwnCache, Error> resolve_own_cache(const std::optional<std::string>& cache_dir_flag,
                                                 const EnvLookup& env) {
    auto named = resolve_cache_root(cache_dir_flag, env);
    if (!named) return std::unexpected(named.error());
    if (!read_only_here(*named)) return OwnCache{*named, std::nullopt};
    auto fallback = default_own_cache(env);
    if (!fallback || plain_dir(*fallback) == plain_dir(*named))
        return OwnCache{*named, std::nullopt};
    return OwnCache{*fallback, *named};
}

std::vector<fs::path> named_read_only_caches(const std::optional<std::string>& flag,
                                             const EnvLookup& env, const fs::path& cwd) {
    std::optional<std::string> list = flag ? flag : env(kReadOnlyCachesVar);
    std::vector<fs::path> out;
    if (!list) return out;
    for (const std::string& element : split_path_list(*list)) {
        fs::path dir = plain_dir(cwd / element);  // an absolute element stays as it is
        if (std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(std::move(dir));
    }
    return out;
}

std::string layer_problem(const fs::path& dir) {
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0)
        return errno == ENOENT ? "it does not exist"
                               : fmt::format("it cannot be reached: {}", std::strerror(errno));
    if (S_ISLNK(st.st_mode))
        return "it is a symbolic link, and bekc follows none to a read-only cache; name the "
               "directory it points to";
    if (!S_ISDIR(st.st_mode)) return "it is not a directory";
    if (::faccessat(AT_FDCWD, dir.c_str(), R_OK | X_OK, AT_EACCESS) != 0)
        return fmt::format("it cannot be read: {}", std::strerror(errno));
    if (!is_bekc_cache(dir))
        return fmt::format("it is not a bekc cache (it has no {})", kMarkerFile);
    return {};
}

std::expected<CacheLayers, Error> resolve_cache_layers(
    const std::optional<std::string>& cache_dir_flag,
    const std::optional<std::string>& read_only_flag, const EnvLookup& env, const fs::path& cwd,
    const std::vector<std::string>& python_sites) {
    auto own = resolve_own_cache(cache_dir_flag, env);
    if (!own) return std::unexpected(own.error());
    CacheLayers layers{own->root, own->demoted, {}, {}, {}};
    if (own->demoted) layers.read_only.push_back(*own->demoted);
    auto known = [&](const fs::path& dir) {
        return dir == plain_dir(layers.own) ||
               std::any_of(layers.read_only.begin(), layers.read_only.end(),
                           [&](const fs::path& layer) { return plain_dir(layer) == dir; });
    };
    for (const fs::path& dir : named_read_only_caches(read_only_flag, env, cwd)) {
        if (known(dir)) continue;
        if (std::string problem = layer_problem(dir); !problem.empty()) {
            layers.skipped.push_back({dir, std::move(problem)});
            continue;
        }
        layers.read_only.push_back(dir);
    }
    add_installed_packs(layers, pack_sites(python_sites, env, cwd), kVersion);
    return layers;
}

}  // namespace bekc
