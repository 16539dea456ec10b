// The remote cache a build uses: --remote-cache (or $BEKC_REMOTE_CACHE, or
// remote_cache in bekc.conf), opened with the build's runner and tool lookup,
// its warnings through the build's Reporter (remote/remote_cache.hpp).
#pragma once

#include <optional>

#include "prep/build_context.hpp"
#include "prep/build_options.hpp"
#include "prep/reporter.hpp"
#include "remote/remote_cache.hpp"

namespace bekc {

// nullopt when none is configured.
std::optional<RemoteCache> open_remote_cache(const BuildOptions& o, BuildContext& ctx,
                                             const Reporter& report);

}  // namespace bekc
