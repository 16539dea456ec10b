#include "prep/remote_choice.hpp"

namespace bekc {

std::optional<RemoteCache> open_remote_cache(const BuildOptions& o, BuildContext& ctx,
                                             const Reporter& report) {
    auto config = remote_config(o.remote_cache, o.remote_read_only, ctx.env);
    if (!config) return std::nullopt;
    return RemoteCache(
        *config, [report](const std::string& m) { report.warn(m); }, ctx.runner, ctx.tools);
}

}  // namespace bekc
