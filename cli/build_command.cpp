#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.hpp"
#include "driver/build.hpp"
#include "driver/build_report.hpp"
#include "driver/fatal.hpp"
#include "json_output.hpp"
#include "package/package_build.hpp"
#include "prep/build_args.hpp"
#include "prep/inputs.hpp"
#include "prep/reporter.hpp"
#include "store/cache_layers.hpp"
#include "store/layout.hpp"
#include "trace_file.hpp"
#include "util/error.hpp"

namespace bekc::cli {

namespace {

using Clock = std::chrono::steady_clock;

// A cache that cannot be used (not writable, another user's, a $HOME
// without .cache): the error, then which cache it is and the three ways to
// choose another; for a bekc cache read-only here, also how to keep it as a
// read-only cache. Nothing for other errors.
std::optional<std::string> cache_way_out(const Error& e, const BuildOptions& o,
                                         const EnvLookup& env) {
    if (e.kind != ErrorKind::Cache) return std::nullopt;
    auto own = resolve_own_cache(o.cache_dir, env);
    if (!own || own->root.empty() || e.render().find(own->root.string()) == std::string::npos)
        return std::nullopt;
    std::string root = own->root.string();
    std::string note = "the cache is " + root;
    if (read_only_here(own->root))
        note += " (read-only here: it serves hits, but a miss needs a cache you can write)";
    note +=
        "; choose another with --cache-dir DIR, $BEKC_CACHE_DIR=DIR, or bekc.set_cache_dir(DIR) "
        "from Python";
    if (read_only_here(own->root))
        note += ", and keep this one as a read-only cache: read_only_caches = " + root +
                " in bekc.conf, or $BEKC_READ_ONLY_CACHES=" + root;
    return note;
}

// A build under way: main() hands a failure on the fatal path to
// `build_failed`, which counts and logs it (a dry run is neither).
struct BuildAttempt {
    std::optional<EnvLookup> env;  // set while run_build runs
    Clock::time_point start;
    TraceFile trace;  // --trace
};

void build_failed(const BuildOptions& o, BuildAttempt& attempt, Error& error) {
    // A build that failed before it began to trace has nothing to write.
    if (Trace* trace = attempt.trace.trace())
        attempt.trace.fail(error, {{"module", trace->name()}, {"cache", "failed"}});
    if (!attempt.env) return;
    const EnvLookup& env = *attempt.env;
    if (!o.dry_run) {
        account_failure(o, env);
        auto logged =
            log_build(o, nullptr, nullptr, error.exit_code(),
                      std::chrono::duration<double>(Clock::now() - attempt.start).count(), env);
        if (!logged) Reporter(o).warn("build log: " + logged.error().message);
    }
    if (auto note = cache_way_out(error, o, env)) error.note(*note);
}

// What a build's trace says of its outcome.
Trace::Args build_trace_args(const TraceFile& trace, const BuildOptions& o, const BuildResult& r) {
    if (!trace.trace()) return {};
    Trace::Args args = {{"module", trace.trace()->name()}};
    if (o.dry_run) {
        args["cache"] = "dry run";
        return args;
    }
    args["cache"] = r.cache_hit ? "hit" : "miss";
    if (r.remote_hit) args["remote_hit"] = true;
    if (!r.cache_hit) args["miss_reason"] = r.miss_reason;
    if (!r.layer.empty()) args["layer"] = r.layer.string();
    args["key"] = r.key;
    args["exit_code"] = 0;
    return args;
}

int build(const BuildOptions& o, BuildAttempt& attempt) {
    Settings settings = load_settings_or_exit(o.cache_dir, o.quiet);
    EnvLookup env = settings.lookup();
    if (is_kernel_package(o)) {
        // Each module is a child `bekc build`, which logs and counts itself;
        // it gets the cache directory the settings chose.
        BuildOptions package = o;
        package.cache_dir = or_fatal(resolve_cache_root(o.cache_dir, env)).string();
        attempt.trace.start(o.trace, "package " + resolved_path(o.inputs.front()).string());
        ProcessRunner runner;
        BuildContext context{runner};
        context.trace = attempt.trace.trace();
        const int code = run_package_build(package, context);
        attempt.trace.finish({{"exit_code", code}});
        return code;
    }
    attempt.trace.start(o.trace, o.name.empty() ? "build" : o.name);
    ProcessRunner runner;
    BuildContext context = context_with(runner, env);
    context.trace = attempt.trace.trace();
    attempt.env = env;
    attempt.start = Clock::now();
    BuildResult r = run_build(o, context);
    attempt.env.reset();
    attempt.trace.finish(build_trace_args(attempt.trace, o, r));
    if (o.dry_run) return kExitOk;
    nlohmann::ordered_json j = report_build(o, r, env, Reporter(o));
    if (o.json)
        print_json(j);
    else
        std::puts(r.manifest.c_str());
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
    auto attempt = std::make_shared<BuildAttempt>();
    return Action([o, attempt] { return build(*o, *attempt); },
                  [o, attempt](Error& error) { build_failed(*o, *attempt, error); });
}

}  // namespace bekc::cli
