#include "config/settings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <system_error>

#include <fmt/format.h>

#include "store/layout.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace {

constexpr std::string_view kConfigName = "bekc.conf";

using Errors = std::vector<std::string>;

// Why a file someone other than the user could have written, or "" when
// only the user (or root) can: its owner is neither, or its group or others
// may write it.
std::string written_by_others(const struct stat& st) {
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
        return fmt::format("is owned by uid {}", st.st_uid);
    if (st.st_mode & S_IWOTH) return "is writable by every user";
    if (st.st_mode & S_IWGRP) return "is writable by its group";
    return {};
}

// Drops the settings an untrusted file may not set (SettingTrust::OwnedFile),
// each with a warning that says why and where to set it instead.
void drop_untrusted(ConfigFile& file, const std::string& why, const EnvLookup& env,
                    std::vector<std::string>& warnings) {
    auto user = user_config_path(env);
    for (const SettingInfo& s : config_settings()) {
        auto it = file.values.find(s.env);
        if (s.trust != SettingTrust::OwnedFile || it == file.values.end()) continue;
        warnings.push_back(fmt::format(
            "{}: warning: {} ignored: this file {}, and a setting that runs a program, sends "
            "credentials or chooses where bekc writes is read only from a file owned by you or "
            "root that no one else can write; set it in {} or ${} (or make this file yours and "
            "chmod go-w it)",
            file.origin(s.env), s.key, why, user ? user->string() : "your own bekc.conf", s.env));
        file.values.erase(it);
    }
}

// The file at `path`, nullopt when it does not exist and need not.
std::expected<std::optional<ConfigFile>, Errors> read_config(const fs::path& path, bool must_exist,
                                                             const EnvLookup& env,
                                                             std::vector<std::string>& warnings) {
    std::error_code ec;
    if (!must_exist && fs::status(path, ec).type() == fs::file_type::not_found) return std::nullopt;
    const ReadOptions options{kMaxConfigBytes, true};
    auto fail = [&](const std::string& why) {
        return std::unexpected(
            Errors{fmt::format("bekc: error: {}; bekc.conf must be a regular file of at most {} "
                               "bytes: fix or remove it",
                               why, kMaxConfigBytes)});
    };
    // Who may have written it is asked of the file read, not of the path.
    auto file = open_regular_file_at(AT_FDCWD, path, path, options);
    if (!file) return fail(file.error().message);
    std::string why = written_by_others(file->st);
    auto text = read_fd(std::move(file->fd), path, options);
    if (!text) return fail(text.error().message);
    auto parsed = parse_config(*text, path);
    if (!parsed) return std::unexpected(parsed.error());
    if (!why.empty()) drop_untrusted(*parsed, why, env, warnings);
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

Settings::Settings(EnvLookup env, std::vector<ConfigFile> files, std::vector<fs::path> places,
                   std::vector<std::string> warnings)
    : env_(std::move(env)),
      files_(std::make_shared<const std::vector<ConfigFile>>(std::move(files))),
      places_(std::move(places)),
      warnings_(std::move(warnings)) {}

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
    std::vector<std::string> warnings;
    auto read = [&](const fs::path& path, bool must_exist) {
        auto file = read_config(path, must_exist, env, warnings);
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
    return Settings(env, std::move(files), std::move(places), std::move(warnings));
}

}  // namespace bekc
