// Which caches a build looks in, in which order, and which one it writes:
// the one place that says so (docs/cache.md, "Layered caches"). ccache's
// local storage with a read-only secondary storage over it
// (`remote_storage = file:DIR|read-only`) is the model.
//
//   1. the user's own cache: cache_dir (resolve_cache_root), or, when that is
//      a bekc cache this user cannot write, the default cache in its place.
//      Looked in first; a miss takes its key's lock here and builds into it.
//   2. the read-only caches, in order: cache_dir first when it is read-only
//      here, then those `read_only_caches` names (--read-only-caches,
//      $BEKC_READ_ONLY_CACHES, bekc.conf). Looked in, never written: no
//      last-use mark, lock, repair or record written (Cache with
//      CacheAccess::ReadOnly).
//      Then the packs installed in the Python sites bekc knows of
//      (installed_packs below; docs/cache.md, "Installed packs").
//   3. the remote cache (--remote-cache), which driver/look_up asks last.
//
// A read-only cache that is missing, a symbolic link, not a directory,
// unreadable or not a bekc cache is skipped, with a warning that names it
// and why. Inside a layer, no link is followed (store/cache_dir.hpp).
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "store/pack_marker.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

// The setting's variable (read_only_caches in bekc.conf).
inline constexpr std::string_view kReadOnlyCachesVar = "BEKC_READ_ONLY_CACHES";

struct OwnCache {
    fs::path root;  // absolute: the cache a miss builds into
    // cache_dir, when it is a bekc cache this user cannot write: it becomes
    // the first read-only cache, and `root` is the default cache
    // ($XDG_CACHE_HOME/bekc or ~/.cache/bekc).
    std::optional<fs::path> demoted;
};

// The user's own cache for `cache_dir_flag` (--cache-dir) and the settings
// `env`. cache_dir stays the own cache when the default is the same
// directory (a miss then fails there, naming it) or when there is none.
std::expected<OwnCache, Error> resolve_own_cache(const std::optional<std::string>& cache_dir_flag,
                                                 const EnvLookup& env);

struct SkippedLayer {
    fs::path dir;
    std::string why;                       // layer_problem's phrase
    std::string what = "read-only cache";  // or "installed pack"

    // "read-only cache DIR skipped: WHY", for a warning.
    std::string message() const;
};

// A pack installed in a Python site: <site>/bekc_packs/<name>/.
struct InstalledPack {
    fs::path dir;
    PackInfo info;
};

struct CacheLayers {
    fs::path own;
    std::optional<fs::path> demoted;    // OwnCache::demoted, also read_only's first
    std::vector<fs::path> read_only;    // the usable read-only caches, in order
    std::vector<SkippedLayer> skipped;  // those named and not used
    std::vector<InstalledPack> packs;   // the installed ones, also read_only's last
};

// The read-only caches named, in order, as absolute paths, none checked:
// `flag` (--read-only-caches; "" names none) when given, else the setting,
// a ':'-separated list whose relative elements are taken from `cwd`.
std::vector<fs::path> named_read_only_caches(const std::optional<std::string>& flag,
                                             const EnvLookup& env, const fs::path& cwd);

// Every layer of a build, each read-only one checked (layer_problem);
// a cache named twice, or naming the own cache, is looked in once. The
// installed packs of `python_sites` (--python-site) and $VIRTUAL_ENV's
// site-packages come after the caches named (add_installed_packs).
std::expected<CacheLayers, Error> resolve_cache_layers(
    const std::optional<std::string>& cache_dir_flag,
    const std::optional<std::string>& read_only_flag, const EnvLookup& env, const fs::path& cwd,
    const std::vector<std::string>& python_sites = {});

// The Python sites whose packs a build uses: `python_sites` (relative ones
// taken from `cwd`), then $VIRTUAL_ENV/lib/python3*/site-packages.
std::vector<fs::path> pack_sites(const std::vector<std::string>& python_sites, const EnvLookup& env,
                                 const fs::path& cwd);

// Each <site>/bekc_packs/<name>/ of `sites` (in order, names in order within
// a site) added to `layers` as a read-only cache, unless it is one already.
// Skipped, with the reason in layers.skipped: a directory that layer_problem
// refuses, whose marker cannot be read or parsed or has no "pack" object, or
// whose pack was made by another bekc version than `bekc_version` (the keys
// hold bekc's version: none of its entries could ever match).
void add_installed_packs(CacheLayers& layers, const std::vector<fs::path>& sites,
                         const std::string& bekc_version);

// The installed pack `name`'s directory in the first of `sites` that has one,
// and the distribution whose .dist-info RECORD lists its files there ("" when
// none: the pack was copied in, not installed by pip).
struct InstalledPackDir {
    fs::path dir;
    std::string pip_distribution;
};
std::expected<InstalledPackDir, Error> find_installed_pack(const std::vector<fs::path>& sites,
                                                           const std::string& name);

// Removes the installed pack at `found.dir`, never following a link; refused
// when pip manages it, or when the directory is not a pack (its marker has
// no "pack" object).
std::expected<void, Error> remove_installed_pack(const InstalledPackDir& found);

// Why `dir` cannot serve as a read-only cache ("it does not exist", "it is
// a symbolic link, ...", "it is not a bekc cache ..."), or "" when it can.
// Reads only.
std::string layer_problem(const fs::path& dir);

// Whether `root` is a bekc cache, asked without writing: an older bekc's
// cache (its CACHEDIR.TAG, no marker) counts too, and gets no marker.
bool is_bekc_cache(const fs::path& root);

// Whether `root` is a bekc cache that a miss cannot build into here: this
// user cannot write its root or one of the directories a miss writes (a
// cache mounted read-only, another user's). A missing directory is not.
bool read_only_here(const fs::path& root);

}  // namespace bekc
