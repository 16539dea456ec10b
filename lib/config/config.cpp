#include "config/config.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "scan/arg_spec.hpp"
#include "store/size.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

// cache_dir and log_file choose where bekc writes; remote_cache (and the
// s3_ settings) where the token or credentials go and whose libraries are
// loaded, and read_only_caches whose
// libraries are loaded; remote_read_only whether the token is used to write
// there; launcher runs a program on every miss; record chooses where bekc
// appends each load (prep/recording.hpp).
constexpr std::array<SettingInfo, 13> kSettings{{
    {"cache_dir", "BEKC_CACHE_DIR", "--cache-dir", SettingType::Path, SettingTrust::OwnedFile},
    {"max_size", "BEKC_CACHE_MAX_SIZE", "", SettingType::Size, SettingTrust::AnyFile},
    {"read_only_caches", "BEKC_READ_ONLY_CACHES", "--read-only-caches", SettingType::PathList,
     SettingTrust::OwnedFile},
    {"remote_cache", "BEKC_REMOTE_CACHE", "--remote-cache", SettingType::Url,
     SettingTrust::OwnedFile},
    {"remote_read_only", "BEKC_REMOTE_CACHE_READONLY", "--remote-cache-read-only",
     SettingType::Bool, SettingTrust::OwnedFile},
    {"remote_wait", "BEKC_REMOTE_WAIT", "", SettingType::Seconds, SettingTrust::AnyFile},
    {"s3_region", "BEKC_S3_REGION", "", SettingType::Word, SettingTrust::OwnedFile},
    {"s3_endpoint", "BEKC_S3_ENDPOINT", "", SettingType::Url, SettingTrust::OwnedFile},
    {"s3_path_style", "BEKC_S3_PATH_STYLE", "", SettingType::Bool, SettingTrust::OwnedFile},
    {"base_dir", "BEKC_BASE_DIR", "", SettingType::Path, SettingTrust::AnyFile},
    {"launcher", "BEKC_LAUNCHER", "--launcher", SettingType::Launcher, SettingTrust::OwnedFile},
    {"log_file", "BEKC_LOG", "", SettingType::Path, SettingTrust::OwnedFile},
    {"record", "BEKC_RECORD", "", SettingType::Path, SettingTrust::OwnedFile},
}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kBools{{
    {"true", "1"},
    {"yes", "1"},
    {"on", "1"},
    {"1", "1"},
    {"false", "0"},
    {"no", "0"},
    {"off", "0"},
    {"0", "0"},
}};

std::string known_keys() {
    std::string out;
    for (const auto& s : kSettings) out += (out.empty() ? "" : ", ") + std::string(s.key);
    return out;
}

// The key a mistyped `key` most likely meant: one spelt with dashes or in
// capitals ("MAX-SIZE"), the variable it stands for ("BEKC_CACHE_MAX_SIZE"),
// or the nearest key ("max_sise"), with the CLI's measure (nearest_word).
std::optional<std::string> suggest_key(std::string_view key) {
    auto normal = [](std::string_view text) {
        std::string out;
        for (char c : text)
            out += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return out.starts_with("bekc_") ? out.substr(5) : out;
    };
    std::string wanted = normal(key);
    std::vector<std::string> keys;
    for (const auto& s : kSettings) {
        if (wanted == s.key || wanted == normal(s.env)) return std::string(s.key);
        keys.emplace_back(s.key);
    }
    return nearest_word(wanted, keys);
}

// A path as written in a file: relative to the file's directory; '~' is not
// expanded, so it is an error.
std::expected<std::string, Error> convert_path(const SettingInfo& s, std::string_view value,
                                               const fs::path& dir) {
    if (value.front() == '~')
        return fail(
            ErrorKind::Usage,
            fmt::format("{}: '~' is not expanded in bekc.conf; write the absolute path", s.key));
    return (dir / fs::path(value)).lexically_normal().string();
}

// Each path of a ':'-separated list as convert_path makes it; empty elements
// (`a::b`, a leading or trailing ':') stand for nothing and are dropped.
std::expected<std::string, Error> convert_path_list(const SettingInfo& s, std::string_view value,
                                                    const fs::path& dir) {
    std::string out;
    for (const std::string& element : split_path_list(value)) {
        auto path = convert_path(s, element, dir);
        if (!path) return path;
        if (path->find(':') != std::string::npos)
            return fail(ErrorKind::Usage,
                        fmt::format("{}: {} holds a ':', which separates the paths of the list",
                                    s.key, *path));
        out += (out.empty() ? "" : ":") + *path;
    }
    return out;
}

// The value as the environment variable would hold it, or why it is bad.
std::expected<std::string, Error> convert(const SettingInfo& s, std::string_view value,
                                          const fs::path& dir) {
    if (value.empty() && s.type != SettingType::Url && s.type != SettingType::PathList)
        return fail(ErrorKind::Usage, fmt::format("{} needs a value", s.key));
    if (has_control_char(value))
        return fail(ErrorKind::Usage, fmt::format("{} contains control characters", s.key));
    switch (s.type) {
        case SettingType::Size:
            if (auto bytes = parse_size(value); !bytes)
                return fail(ErrorKind::Usage, fmt::format("{}: {}", s.key, bytes.error().message));
            return std::string(value);
        case SettingType::Bool:
            for (const auto& [word, as_env] : kBools)
                if (lower_case(value) == word) return std::string(as_env);
            return fail(ErrorKind::Usage,
                        fmt::format("{} must be true or false (or yes/no, on/off, 1/0), not '{}'",
                                    s.key, value));
        case SettingType::Url: {
            std::string l = lower_case(value);
            bool s3 = s.key == "remote_cache" && l.rfind("s3://", 0) == 0;
            if (!value.empty() && l.rfind("http://", 0) != 0 && l.rfind("https://", 0) != 0 && !s3)
                return fail(ErrorKind::Usage,
                            fmt::format("{} must be an {} URL (or empty: none), not '{}'", s.key,
                                        s.key == "remote_cache" ? "http://, https:// or s3://"
                                                                : "http:// or https://",
                                        value));
            return std::string(value);
        }
        case SettingType::Word:
            if (!std::all_of(value.begin(), value.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                           c == '.';
                }))
                return fail(ErrorKind::Usage,
                            fmt::format("{} must be a plain word (letters, digits, '-', '_', "
                                        "'.'), not '{}'",
                                        s.key, value));
            return std::string(value);
        case SettingType::Seconds:
            if (value.size() > 4 || !std::all_of(value.begin(), value.end(), ::isdigit) ||
                std::stoi(std::string(value)) > 3600)
                return fail(ErrorKind::Usage,
                            fmt::format("{} must be a number of seconds from 0 to 3600, not '{}'",
                                        s.key, value));
            return std::string(value);
        case SettingType::PathList:
            return convert_path_list(s, value, dir);
        case SettingType::Launcher:
            // A bare name is looked up on PATH, as on the command line.
            if (value.find('/') == std::string_view::npos) return std::string(value);
            [[fallthrough]];
        case SettingType::Path:
            return convert_path(s, value, dir);
    }
    return std::string(value);
}

}  // namespace

std::span<const SettingInfo> config_settings() {
    return kSettings;
}

const SettingInfo* find_setting(std::string_view key) {
    for (const auto& s : kSettings)
        if (s.key == key) return &s;
    return nullptr;
}

std::string ConfigFile::origin(std::string_view env) const {
    auto it = values.find(env);
    return fmt::format("{}:{}", path.string(), it == values.end() ? 0 : it->second.line);
}

std::expected<ConfigFile, std::vector<std::string>> parse_config(std::string_view text,
                                                                 const fs::path& file) {
    ConfigFile out{file, {}};
    std::vector<std::string> errors;
    std::map<std::string_view, size_t> seen;
    size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        size_t end = text.find('\n');
        std::string_view line = trim(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        if (line.empty() || line.front() == '#') continue;
        auto fail = [&](const std::string& what) {
            errors.push_back(fmt::format("{}:{}: error: {}", file.string(), line_no, what));
        };
        size_t eq = line.find('=');
        if (eq == std::string_view::npos) {
            fail("expected 'key = value'");
            continue;
        }
        std::string_view key = trim(line.substr(0, eq));
        const SettingInfo* s = find_setting(key);
        if (!s) {
            auto close = suggest_key(key);
            fail(fmt::format("unknown key '{}'; {}bekc.conf knows {}", key,
                             close ? "did you mean " + *close + "? " : "", known_keys()));
            continue;
        }
        if (auto [it, fresh] = seen.emplace(s->key, line_no); !fresh) {
            fail(fmt::format("{} is set twice (first on line {})", s->key, it->second));
            continue;
        }
        auto value = convert(*s, trim(line.substr(eq + 1)), file.parent_path());
        if (!value) {
            fail(value.error().message);
            continue;
        }
        out.values[std::string(s->env)] = ConfigValue{*value, line_no};
    }
    if (!errors.empty()) return std::unexpected(std::move(errors));
    return out;
}

}  // namespace bekc
