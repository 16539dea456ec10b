// `bekc config --show`: every setting bekc would use, and where it came from,
// as `ccache -p` prints them. The layering is config/settings.hpp's.
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "config/setting_options.hpp"
#include "driver/fatal.hpp"
#include "store/cache.hpp"
#include "store/cache_layers.hpp"
#include "store/size.hpp"
#include "util/error.hpp"

namespace bekc::cli {

namespace {

struct ConfigOptions {
    bool show = false;  // the one thing config does; --show is kept for scripts that pass it
    std::optional<std::string> cache_dir, read_only_caches, remote_cache, launcher;
    bool remote_read_only = false;
};

// The value a command-line option gives `s`, if any.
std::optional<std::string> from_flag(const SettingInfo& s, const ConfigOptions& o) {
    if (s.key == "cache_dir" && o.cache_dir) return fs::absolute(*o.cache_dir).string();
    if (s.key == "remote_cache") return o.remote_cache;
    if (s.key == "read_only_caches") return o.read_only_caches;
    if (s.key == "launcher") return o.launcher;
    if (s.key == "remote_read_only" && o.remote_read_only) return "1";
    return std::nullopt;
}

// What bekc uses when nothing sets `s`, and what says so.
SettingValue default_of(const SettingInfo& s, const fs::path& root, const EnvLookup& env) {
    if (s.key == "cache_dir") return {root.string(), "default"};
    if (s.key == "max_size") {
        auto limit = Cache(root).size_limit(env);
        if (!limit) return {"", limit.error().message};
        return {limit->bytes ? format_size(limit->bytes) : "0 (no limit)",
                limit->source == "default" ? "default" : (root / limit->source).string()};
    }
    if (s.key == "remote_read_only") return {"0", "default"};
    return {"", "default"};
}

// The caches a build looks in, in order (store/cache_layers.hpp), and those
// it skips.
void show_layers(const ConfigOptions& o, const EnvLookup& env) {
    CacheLayers layers =
        or_fatal(resolve_cache_layers(o.cache_dir, o.read_only_caches, env, fs::current_path()));
    std::printf("# caches a build looks in, in order:\n");
    std::printf("#   %s (your own: misses build into it)\n", layers.own.c_str());
    for (const auto& dir : layers.read_only)
        std::printf(
            "#   %s (read-only%s)\n", dir.c_str(),
            layers.demoted && dir == *layers.demoted ? ": cache_dir, not writable here" : "");
    for (const auto& skipped : layers.skipped)
        std::printf("#   %s (read-only, skipped: %s)\n", skipped.dir.c_str(), skipped.why.c_str());
}

int show(const ConfigOptions& o) {
    Settings settings = load_settings_or_exit(o.cache_dir);
    EnvLookup env = settings.lookup();
    fs::path root = or_fatal(resolve_cache_root(o.cache_dir, env));
    std::printf("# bekc.conf files, most specific first:\n");
    for (const auto& place : settings.places()) {
        bool read = false;
        for (const auto& f : settings.files()) read = read || f.path == place;
        std::printf("#   %s%s\n", place.c_str(), read ? "" : " (not present)");
    }
    for (const SettingInfo& s : config_settings()) {
        SettingValue v;
        if (auto flag = from_flag(s, o)) {
            v = {*flag, std::string(s.flag)};
        } else if (auto found = settings.find(s.env)) {
            v = *found;
        } else {
            v = default_of(s, root, env);
        }
        std::printf("(%s) %s = %s\n", v.origin.c_str(), std::string(s.key).c_str(),
                    v.value.c_str());
    }
    show_layers(o, env);
    return kExitOk;
}

}  // namespace

Settings load_settings_or_exit(const std::optional<std::string>& cache_dir_flag, bool quiet) {
    auto settings = load_settings(cache_dir_flag, system_env());
    if (settings) {
        if (!quiet)
            for (const auto& w : settings->warnings()) std::fprintf(stderr, "%s\n", w.c_str());
        return std::move(*settings);
    }
    // Each is a whole diagnostic already ("bekc.conf:3: error: ...").
    for (const auto& e : settings.error()) std::fprintf(stderr, "%s\n", e.c_str());
    fatal(Error::make(ErrorKind::Usage, ""));
}

Action add_config_command(CLI::App& app) {
    auto o = std::make_shared<ConfigOptions>();
    CLI::App* cmd = app.add_subcommand(
        "config",
        "Show the settings bekc uses (bekc.conf, the environment, the command line) and where "
        "each comes from");
    cmd->add_flag("--show", o->show,
                  "Print every setting as '(origin) key = value' (what bekc config does without "
                  "it too)");
    add_setting_options(cmd, o->cache_dir, o->read_only_caches, o->remote_cache,
                        o->remote_read_only, o->launcher);
    return [o] { return show(*o); };
}

}  // namespace bekc::cli
