// `bekc config --show`: every setting bekc would use, and where it came from,
// as `ccache -p` prints them. The layering is config/settings.hpp's.
// `bekc config --json`: the same as one JSON object, with the caches, and
// what bekc's Python package reads from the binary: the exit codes, `bekc
// build`'s options, the loaders' keywords and the --arch refusals
// (python/bekc/_interface.py is generated from it).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "config/cache_choice.hpp"
#include "config/setting_options.hpp"
#include "driver/fatal.hpp"
#include "json_output.hpp"
#include "plan/arch.hpp"
#include "prep/build_args.hpp"
#include "scan/loader_keywords.hpp"
#include "store/cache.hpp"
#include "store/cache_layers.hpp"
#include "store/size.hpp"
#include "util/error.hpp"
#include "util/exit_codes.hpp"

namespace bekc::cli {

namespace {

using Json = nlohmann::ordered_json;

struct ConfigOptions {
    bool show = false;  // the one thing config does; --show is kept for scripts that pass it
    bool json = false;
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

struct SettingRow {
    std::string key;
    SettingValue value;
};

// Every setting's value and origin: the flag, the environment or a file, else
// the default.
std::vector<SettingRow> setting_rows(const ConfigOptions& o, const Settings& settings,
                                     const fs::path& root, const EnvLookup& env) {
    std::vector<SettingRow> rows;
    for (const SettingInfo& s : config_settings()) {
        SettingValue v;
        if (auto flag = from_flag(s, o)) {
            v = {*flag, std::string(s.flag)};
        } else if (auto found = settings.find(s.env)) {
            v = *found;
        } else {
            v = default_of(s, root, env);
        }
        rows.push_back({std::string(s.key), std::move(v)});
    }
    return rows;
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
    for (const SettingRow& row : setting_rows(o, settings, root, env))
        std::printf("(%s) %s = %s\n", row.value.origin.c_str(), row.key.c_str(),
                    row.value.value.c_str());
    show_layers(o, env);
    return kExitOk;
}

// `bekc build`'s options as CLI11 defines them (prep/build_args): each
// one's spellings, whether it takes a value, and whether it may be given
// more than once.
Json build_options_json() {
    CLI::App cmd;
    BuildOptions unused;
    add_build_options(cmd, unused);
    Json out = Json::array();
    for (const CLI::Option* opt : cmd.get_options()) {
        if (opt->get_positional() || opt == cmd.get_help_ptr()) continue;
        Json names = Json::array();
        for (const auto& s : opt->get_snames()) names.push_back("-" + s);
        for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
        out.push_back({{"names", names},
                       {"value", opt->get_items_expected_max() > 0},
                       {"repeatable", opt->get_expected_max() > 1}});
    }
    return out;
}

Json loader_keywords_json() {
    static constexpr const char* kForms[] = {"each", "value", "when_true", "when_false", "none"};
    Json out = Json::array();
    for (const LoaderKeyword& k : kLoaderKeywords)
        out.push_back({{"keyword", std::string(k.keyword)},
                       {"kind", std::string(k.kind)},
                       {"option", std::string(k.option)},
                       {"form", kForms[static_cast<int>(k.form)]}});
    return out;
}

Json exit_codes_json() {
    Json out = Json::array();
    for (const ExitCodeRow& row : kExitCodeRows)
        out.push_back({{"kind", std::string(row.name)},
                       {"code", row.code},
                       {"meaning", std::string(row.meaning)}});
    return out;
}

int show_json(const ConfigOptions& o) {
    Settings settings = load_settings_or_exit(o.cache_dir);
    EnvLookup env = settings.lookup();
    fs::path root = or_fatal(resolve_cache_root(o.cache_dir, env));
    Json rows = Json::array();
    for (const SettingRow& row : setting_rows(o, settings, root, env))
        rows.push_back(
            {{"key", row.key}, {"value", row.value.value}, {"origin", row.value.origin}});
    CacheChoice cache = or_fatal(choose_cache(o.cache_dir, system_env()));
    print_json({{"settings", rows},
                {"cache", cache_choice_json(cache)},
                {"exit_codes", exit_codes_json()},
                {"build_options", build_options_json()},
                {"loader_keywords", loader_keywords_json()},
                {"arch_refusals",
                 {{"prefix", std::string(kArchRefusalPrefix)},
                  {"no_gpu", std::string(kArchNoGpuWords)},
                  {"unreadable", std::string(kArchUnreadableWords)}}}});
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
    cmd->add_flag("--json", o->json,
                  "Print one JSON object: the settings, the caches, and what bekc's Python "
                  "package reads from the binary (docs/cli.md, \"Scripting\")");
    add_setting_options(cmd, o->cache_dir, o->read_only_caches, o->remote_cache,
                        o->remote_read_only, o->launcher);
    return [o] { return o->json ? show_json(*o) : show(*o); };
}

}  // namespace bekc::cli
