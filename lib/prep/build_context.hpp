// What a build reaches outside its options: the runner that writes and
// spawns, the environment, and where programs are found. Tests give their
// own (tests/helpers/fake_runner.hpp) and need no compiler.
#pragma once

#include <unistd.h>

#include "run/runner.hpp"
#include "run/trace.hpp"
#include "store/layout.hpp"
#include "toolchain/compiler_env.hpp"
#include "toolchain/tools.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"

namespace bekc {

struct BuildContext {
    Runner& runner;
    EnvLookup env = system_env();
    RawEnvLookup raw_env = process_environment();  // what the tools see
    ToolLookup tools = ToolLookup::system();
    fs::path cwd = fs::current_path();
    // --trace: the phases and steps of the build are recorded here
    // (run/trace.hpp); null records nothing and reads no clock.
    Trace* trace = nullptr;
};

// A context whose settings and tool lookup both read `env` (config/settings.hpp).
inline BuildContext context_with(Runner& runner, const EnvLookup& env) {
    BuildContext context{runner};
    context.env = env;
    context.tools.env = env;
    return context;
}

// Where bekc's private directories go (util/fs.hpp, PrivateDirPlaces) for a
// build with this context's environment and this cache: $XDG_RUNTIME_DIR and
// $TMPDIR as the tools see them, then the cache's own place.
inline PrivateDirPlaces private_dir_places(const fs::path& cache_root, const BuildContext& ctx) {
    return {ctx.raw_env("XDG_RUNTIME_DIR"), ctx.raw_env("TMPDIR"),
            cache_root / CacheLayout::private_builds(::getuid())};
}

}  // namespace bekc
