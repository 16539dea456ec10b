#include "config/settings.hpp"

#include <system_error>

#include <fmt/format.h>

#include "store/layout.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace {

constexpr std::string_view kConfigName = "bekc.conf";

using Errors = std::vector<std::string>;

// The file at `path`, nullopt when it does not exist and need not.
std::expected<std::optional<ConfigFile>, Errors> read_config(const fs::path& path,
                                                             bool must_exist) {
    std::error_code ec;
    if (!must_exist && fs::status(path, ec).type() == fs::file_type::not_found) return std::nullopt;
    auto text = read_file(path, ReadOptions{kMaxConfigBytes, true});
    if (!text)
        return std::unexpected(
            Errors{fmt::format("bekc: error: {}; bekc.conf must be a regular file of at most {} "
                               "bytes: fix or remove it",
                               text.error(), kMaxConfigBytes)});
    auto parsed = parse_config(*text, path);
    if (!parsed) return std::unexpected(parsed.error());
    return *parsed;
}

// A cache_dir in <cache>/bekc.conf could not move the cache it lives in.
std::optional<std::string> misplaced_cache_dir(const ConfigFile& file, const EnvLookup& env) {
    if (!file.values.contains("BEKC_CACHE_DIR")) return std::nullopt;
    auto user = user_config_path(env);
    return fmt::format(
        "{}: error: cache_dir cannot be set in the cache's own bekc.conf; set it in {} or "
        "$BEKC_CACHE_DIR",
        file.origin("BEKC_CACHE_DIR"), user ? user->string() : "$BEKC_CONFIG");
}

}  // namespace

Settings::Settings(EnvLookup env, std::vector<ConfigFile> files, std::vector<fs::path> places)
    : env_(std::move(env)),
      files_(std::make_shared<const std::vector<ConfigFile>>(std::move(files))),
      places_(std::move(places)) {}

EnvLookup Settings::lookup() const {
    return [env = env_, files = files_](std::string_view name) -> std::optional<std::string> {
        if (auto v = env(name)) return v;
        for (const auto& f : *files)
            if (auto it = f.values.find(name); it != f.values.end()) return it->second.value;
        return std::nullopt;
    };
}

std::optional<SettingValue> Settings::find(std::string_view env_name) const {
    if (auto v = env_(env_name)) {
        std::string origin = "$";
        origin += env_name;
        return SettingValue{*v, std::move(origin)};
    }
    for (const auto& f : *files_)
        if (auto it = f.values.find(env_name); it != f.values.end())
            return SettingValue{it->second.value, f.origin(env_name)};
    return std::nullopt;
}

std::optional<fs::path> user_config_path(const EnvLookup& env) {
    if (auto xdg = env("XDG_CONFIG_HOME"); xdg && fs::path(*xdg).is_absolute())
        return fs::path(*xdg) / "bekc" / kConfigName;
    if (auto home = env("HOME"); home && !home->empty())
        return fs::path(*home) / ".config" / "bekc" / kConfigName;
    return std::nullopt;
}

std::expected<Settings, std::vector<std::string>> load_settings(
    const std::optional<std::string>& cache_dir_flag, const EnvLookup& env) {
    Errors errors;
    auto read = [&](const fs::path& path, bool must_exist) {
        auto file = read_config(path, must_exist);
        if (!file) errors.insert(errors.end(), file.error().begin(), file.error().end());
        return file ? *file : std::nullopt;
    };
    std::optional<fs::path> user_path = user_config_path(env);
    if (user_path) user_path = fs::absolute(*user_path);
    std::optional<ConfigFile> user = user_path ? read(*user_path, false) : std::nullopt;

    auto named = env("BEKC_CONFIG");
    std::optional<fs::path> specific_path;
    if (named) {
        specific_path = fs::absolute(*named);
    } else if (cache_dir_flag) {
        specific_path = fs::absolute(*cache_dir_flag) / kConfigName;
    } else {
        // The cache's own file: the cache directory is known without it.
        std::vector<ConfigFile> known;
        if (user) known.push_back(*user);
        if (auto dir = default_cache_dir(Settings(env, known, {}).lookup()))
            specific_path = fs::absolute(*dir) / kConfigName;
    }
    std::optional<ConfigFile> specific =
        specific_path ? read(*specific_path, named.has_value()) : std::nullopt;
    if (specific && !named)
        if (auto bad = misplaced_cache_dir(*specific, env)) errors.push_back(*bad);
    if (!errors.empty()) return std::unexpected(std::move(errors));

    std::vector<ConfigFile> files;
    std::vector<fs::path> places;
    for (const auto* path : {&specific_path, &user_path})
        if (*path) places.push_back(**path);
    for (auto* file : {&specific, &user})
        if (*file) files.push_back(std::move(**file));
    return Settings(env, std::move(files), std::move(places));
}

}  // namespace bekc
