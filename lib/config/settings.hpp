// The settings every command reads: the environment layered over the
// bekc.conf files (config/config.hpp), as ccache layers its configuration.
//
// Precedence, highest first:
//   1. the command line (--cache-dir, --remote-cache, --launcher, ...): the
//      callers check their flags before asking the lookup;
//   2. the environment (BEKC_CACHE_DIR, ...);
//   3. the specific file: $BEKC_CONFIG when set, else <cache>/bekc.conf;
//   4. the user's file: $XDG_CONFIG_HOME/bekc/bekc.conf, or
//      ~/.config/bekc/bekc.conf when XDG_CONFIG_HOME is unset or relative;
//   5. the defaults.
//
// <cache> is itself a setting: the cache directory is chosen from --cache-dir,
// $BEKC_CACHE_DIR, then cache_dir in $BEKC_CONFIG or the user's file, then the
// default, and only then is <cache>/bekc.conf read; a cache_dir in that file
// could not move the cache it lives in, so it is an error there.
#pragma once

#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "util/env.hpp"

namespace bekc {

// Where a setting's value came from, for `bekc config --show`.
struct SettingValue {
    std::string value;
    std::string origin;  // "$BEKC_CACHE_DIR", "FILE:LINE"
};

class Settings {
  public:
    Settings(EnvLookup env, std::vector<ConfigFile> files, std::vector<fs::path> places,
             std::vector<std::string> warnings = {});

    // Answers a name from the environment when set there, else from the
    // files (most specific first); names no file sets (PATH, HOME) pass
    // through to the environment.
    EnvLookup lookup() const;
    // The value of `env_name` and its origin, or nullopt (the default).
    std::optional<SettingValue> find(std::string_view env_name) const;
    // Every place a file was looked for, most specific first.
    const std::vector<fs::path>& places() const { return places_; }
    const std::vector<ConfigFile>& files() const { return *files_; }
    // "FILE:LINE: warning: ..." for each setting a file may not set and
    // which was ignored (config/config.hpp, SettingTrust).
    const std::vector<std::string>& warnings() const { return warnings_; }

  private:
    EnvLookup env_;
    // Shared with the lookups, which outlive no Settings' copy of it.
    std::shared_ptr<const std::vector<ConfigFile>> files_;
    std::vector<fs::path> places_;
    std::vector<std::string> warnings_;
};

// The user's file: $XDG_CONFIG_HOME/bekc/bekc.conf (when absolute), else
// $HOME/.config/bekc/bekc.conf; nullopt when neither variable is set.
std::optional<fs::path> user_config_path(const EnvLookup& env);

// Reads the files (each at most kMaxConfigBytes, a regular file: a FIFO or
// device is refused, never waited on). A file owned by someone other than
// the user or root, or writable by its group or others, sets only the
// settings anyone may set; the others are dropped with a warning. A missing file is skipped, except
// the one $BEKC_CONFIG names. `cache_dir_flag`: --cache-dir. The errors are messages as compilers
// print them ("FILE:LINE: error: ...", or "bekc: error: ..." for a file that cannot be read).
std::expected<Settings, std::vector<std::string>> load_settings(
    const std::optional<std::string>& cache_dir_flag, const EnvLookup& env);

}  // namespace bekc
