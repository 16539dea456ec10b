#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.hpp"
#include "driver/build.hpp"
#include "driver/build_args.hpp"
#include "driver/build_report.hpp"
#include "driver/fatal.hpp"
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
std::optional<std::string> cache_way_out(const Error& e, const BuildOptions& o,
                                         const EnvLookup& env) {
    if (e.kind != ErrorKind::Cache) return std::nullopt;
    auto root = resolve_cache_root(o.cache_dir, env);
    if (!root || root->empty() || e.render().find(root->string()) == std::string::npos)
        return std::nullopt;
    return "the cache is " + root->string() +
           "; choose another with --cache-dir DIR, $BEKC_CACHE_DIR=DIR, or "
           "bekc.set_cache_dir(DIR) from Python";
}

// A build log that could not be written: a warning; the build's result stands.
void warn_log_problem(const BuildOptions& o, const std::optional<std::string>& problem) {
    if (problem && !o.quiet)
        std::fprintf(stderr, "bekc: warning: build log: %s\n", problem->c_str());
}

int build(const BuildOptions& o) {
    Settings settings = load_settings_or_exit(o.cache_dir, o.quiet);
    EnvLookup env = settings.lookup();
    if (is_kernel_package(o)) {
        // Each module is a child `bekc build`, which logs and counts itself;
        // it gets the cache directory the settings chose.
        BuildOptions package = o;
        package.cache_dir = or_fatal(resolve_cache_root(o.cache_dir, env)).string();
        ProcessRunner runner;
        BuildContext context{runner};
        return run_package_build(package, context);
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
        // The one recovery on the fatal path: a failed build is counted and
        // logged, then the error goes on to main().
        if (!o.dry_run) {
            account_failure(o, env);
            warn_log_problem(
                o, log_build(o, nullptr, nullptr, e.exit_code(),
                             std::chrono::duration<double>(Clock::now() - start).count(), env));
        }
        Error error = e.error();
        if (auto note = cache_way_out(error, o, env)) fatal(std::move(error.note(*note)));
        throw;
    }
    if (o.dry_run) return kExitOk;
    nlohmann::ordered_json why = account_build(o, r, env);
    warn_log_problem(o, log_build(o, &r, why, kExitOk, r.seconds_total, env));
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
    return kExitOk;
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
