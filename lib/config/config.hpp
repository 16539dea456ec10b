// bekc.conf, the configuration file, like ccache's ccache.conf:
//
//     # comment
//     cache_dir = /scratch/bekc
//     max_size = 20G
//
// One `key = value` per line; `#` starts a comment line; blank lines are
// ignored. Each key stands for one environment variable (the table below),
// and the rest of bekc reads settings only through those names (an
// EnvLookup), so a file value reaches every place the variable does. Parsing
// is pure: text and the file's name in, values or "FILE:LINE: error: ..."
// out. Where the files are and which wins: config/settings.hpp.
#pragma once

#include <cstddef>
#include <expected>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bekc {

namespace fs = std::filesystem;

enum class SettingType {
    Path,      // relative: to the file's directory
    Size,      // store/size.hpp's syntax
    Bool,      // true/false, yes/no, on/off, 1/0
    Url,       // http://, https:// or (remote_cache) s3://; empty turns the remote cache off
    Word,      // letters, digits, '-', '_' and '.' (an S3 region)
    Seconds,   // a whole number of seconds, 0 to 3600
    Launcher,  // a name on PATH, or a path (relative: to the file's directory)
    PathList,  // paths separated by ':' (relative: to the file's directory); empty: none
};

// Who may set a setting in a file. A cache shared by a team is writable by
// every member, and so is its bekc.conf: a setting that runs a program,
// sends the user's credentials or chooses where bekc writes must come from a
// file only the user (or root) can change (config/settings.hpp).
enum class SettingTrust {
    AnyFile,    // harmless from anyone's file: a size limit, the base directory
    OwnedFile,  // only from a file owned by the user or root, writable by no one else
};

struct SettingInfo {
    std::string_view key;   // in bekc.conf
    std::string_view env;   // the environment variable, which overrides the file
    std::string_view flag;  // the command-line option that overrides both, or ""
    SettingType type;
    SettingTrust trust;
};

// Every setting, in the order `bekc config --show` prints them.
std::span<const SettingInfo> config_settings();
// nullptr for a key bekc does not know.
const SettingInfo* find_setting(std::string_view key);

// The largest bekc.conf read; a larger one is an error, not read.
inline constexpr uint64_t kMaxConfigBytes = uint64_t{1} << 20;

struct ConfigValue {
    std::string value;  // relative paths already made absolute
    size_t line = 0;
};

struct ConfigFile {
    fs::path path;
    std::map<std::string, ConfigValue, std::less<>> values;  // by environment variable name

    // "FILE:LINE" of the value for `env`.
    std::string origin(std::string_view env) const;
};

// Parses `text`, the content of `file` (absolute, for relative paths in it).
// Every bad line is one "FILE:LINE: error: ..." message.
std::expected<ConfigFile, std::vector<std::string>> parse_config(std::string_view text,
                                                                 const fs::path& file);

}  // namespace bekc
