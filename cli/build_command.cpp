#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "build_report.hpp"
#include "commands.hpp"
#include "driver/build.hpp"
#include "driver/build_args.hpp"
#include "driver/inputs.hpp"
#include "driver/package_build.hpp"
#include "store/layout.hpp"
#include "util/error.hpp"

namespace bekc::cli {

namespace {

using Clock = std::chrono::steady_clock;

// A cache that cannot be used (not writable, another user's, a $HOME
// without .cache): the error, then which cache it is and the three ways to
// choose another. Nothing for other errors.
std::optional<std::string> cache_way_out(const FatalError& e, const BuildOptions& o,
                                         const EnvLookup& env) {
    if (e.exit_code() != kExitCache) return std::nullopt;
    std::string root;
    try {
        root = resolve_cache_root(o.cache_dir, env).string();
    } catch (const FatalError&) {
        return std::nullopt;
    }
    std::string message = e.what();
    if (root.empty() || message.find(root) == std::string::npos) return std::nullopt;
    return message + "\nnote: the cache is " + root +
           "; choose another with --cache-dir DIR, $BEKC_CACHE_DIR=DIR, or "
           "bekc.set_cache_dir(DIR) from Python";
}

int build(const BuildOptions& o) {
    Settings settings = load_settings_or_exit(o.cache_dir, o.quiet);
    EnvLookup env = settings.lookup();
    if (is_kernel_package(o)) {
        // Each module is a child `bekc build`, which logs and counts itself;
        // it gets the cache directory the settings chose.
        BuildOptions package = o;
        package.cache_dir = resolve_cache_root(o.cache_dir, env).string();
        return run_package_build(package);
    }
    ProcessRunner runner;
    BuildContext context{runner};
    context.env = env;
    context.tools.env = env;
    auto start = Clock::now();
    BuildResult r;
    try {
        r = run_build(o, context);
    } catch (const FatalError& e) {
        if (!o.dry_run) {
            account_failure(o, env);
            log_build(o, nullptr, nullptr, e.exit_code(),
                      std::chrono::duration<double>(Clock::now() - start).count(), env);
        }
        if (auto note = cache_way_out(e, o, env)) throw FatalError(*note, e.exit_code());
        throw;
    }
    if (o.dry_run) return r.exit_code;
    nlohmann::ordered_json why = account_build(o, r, env);
    log_build(o, &r, why, r.exit_code, r.seconds_total, env);
    if (o.json) {
        nlohmann::ordered_json j = {
            {"manifest", r.manifest.string()},
            {"library", r.library.string()},
            {"cache_hit", r.cache_hit},
            {"remote_hit", r.remote_hit},
            {"targets", r.targets},
            {"timings", {{"total_s", r.seconds_total}, {"compile_s", r.seconds_compile}}},
        };
        if (!r.cache_hit) j["miss_reason"] = r.miss_reason;
        j["why"] = why;
        std::puts(j.dump().c_str());
    } else {
        std::puts(r.manifest.c_str());
    }
    return r.exit_code;
}

}  // namespace

Action add_build_command(CLI::App& app) {
    auto o = std::make_shared<BuildOptions>();
    CLI::App* cmd = app.add_subcommand(
        "build",
        "Compile kernel sources into one library of XLA FFI handlers plus a manifest; "
        "print the manifest's path");
    add_build_options(*cmd, *o);
    return [o] { return build(*o); };
}

}  // namespace bekc::cli
