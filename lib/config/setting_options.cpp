#include "config/setting_options.hpp"

#include <CLI/CLI.hpp>

namespace bekc {

void add_setting_options(CLI::App* cmd, std::optional<std::string>& cache_dir,
                         std::optional<std::string>& read_only_caches,
                         std::optional<std::string>& remote_cache, bool& remote_read_only,
                         std::optional<std::string>& launcher) {
    cmd->add_option("--cache-dir", cache_dir,
                    "Cache directory (default: $BEKC_CACHE_DIR, cache_dir in bekc.conf, "
                    "$XDG_CACHE_HOME/bekc or ~/.cache/bekc)");
    cmd->add_option("--read-only-caches", read_only_caches,
                    "Caches to look in after your own, never written: DIR[:DIR...] (default: "
                    "$BEKC_READ_ONLY_CACHES, read_only_caches in bekc.conf; \"\": none)");
    cmd->add_option("--remote-cache", remote_cache,
                    "HTTP cache shared by several machines (GET/PUT of whole entries; default: "
                    "$BEKC_REMOTE_CACHE; token from $BEKC_REMOTE_TOKEN)");
    cmd->add_flag("--remote-cache-read-only", remote_read_only,
                  "Only read from the remote cache (also $BEKC_REMOTE_CACHE_READONLY=1)");
    cmd->add_option("--launcher", launcher,
                    "Compiler launcher put in front of nvcc and the host compiler: ccache, "
                    "sccache or a path (default: $BEKC_LAUNCHER)");
}

}  // namespace bekc
