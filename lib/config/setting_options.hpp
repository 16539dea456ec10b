// The command-line options that override bekc.conf's settings
// (config/settings.hpp), for `bekc build` and `bekc config`.
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace bekc {

void add_setting_options(CLI::App* cmd, std::optional<std::string>& cache_dir,
                         std::optional<std::string>& read_only_caches,
                         std::optional<std::string>& remote_cache, bool& remote_read_only,
                         std::optional<std::string>& launcher);

}  // namespace bekc
