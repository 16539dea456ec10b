#include "driver/build.hpp"

#include <cstdio>

#include "driver/fatal.hpp"
#include "driver/phases.hpp"
#include "graph/compile_commands.hpp"
#include "graph/nvcc_split.hpp"
#include "graph/recipe.hpp"
#include "portable/portable.hpp"
#include "prep/prepare.hpp"
#include "prep/recording.hpp"
#include "prep/reporter.hpp"
#include "run/execute.hpp"
#include "store/runtime_headers.hpp"
#include "util/error.hpp"

namespace bekc {

BuildInputs prepare_build(const BuildOptions& options, BuildContext& context) {
    return or_fatal(prepare(options, context, Reporter(options)));
}

PlannedBuild plan_build(const BuildInputs& in, const BuildOptions& o) {
    return or_fatal(plan(in, o));
}

void explain_plan(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned) {
    if (!o.explain_key) return;
    if (in.toolchain_missing) {
        std::fputs(planned.portable_key_record.c_str(), stdout);
        return;
    }
    // Why this nvcc: not hashed (the same binary found another way builds
    // the same library), so on stderr, beside the records.
    if (in.nvcc)
        std::fprintf(stderr, "bekc: nvcc %s (chosen by %s)\n", in.nvcc->path.c_str(),
                     in.nvcc_how.c_str());
    std::fputs(planned.direct_key_record.c_str(), stdout);
}

void write_planned_compile_commands(const BuildInputs& in, const BuildOptions& o) {
    if (!o.compile_commands || o.dry_run || in.toolchain_missing) return;
    or_fatal(write_compile_commands(fs::path(*o.compile_commands), in,
                                    or_fatal(materialize_runtime_headers(in.cache_root))));
}

BuildResult run_build(const BuildOptions& options) {
    ProcessRunner runner;
    BuildContext context{runner};
    return run_build(options, context);
}

namespace {

// --dry-run: the planned graph filled in as a build would fill it in, step
// by step, on stdout. Its private directory is only named, and nvcc's phases
// are asked for as a build asks (nvcc --dryrun writes nothing).
void dry_run(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& p, BuildContext& ctx,
             const Reporter& report) {
    if (!in.arch_fallback.empty()) report.warn(in.arch_fallback);
    DryRunRunner dry;
    ExecuteOptions eo;
    eo.echo = stdout;
    eo.jobs = jobs_wanted(o);
    GraphDirs dirs = build_dirs(in, private_user_path() / (p.dir_name + ".XXXXXX"));
    dirs.device_threads = device_threads_for(in, eo.jobs, !dirs.runtime_object_ready);
    BuildGraph graph = or_fatal(fill_in(p.recipe, dirs));
    split_nvcc_compiles(graph, ask_nvcc_phases(graph, in, ctx.runner, ctx.tools), in);
    (void)execute_graph(graph, dry, eo);
}

struct Attempt {
    BuildResult result;
    // An input that changed between bekc's read and the compilers': nothing
    // of this attempt may be used, and the build starts again.
    std::optional<std::string> restart;
};

// What the plan decides of the result.
BuildResult planned_result(const PlannedBuild& planned) {
    BuildResult result;
    result.targets = planned.targets;
    result.direct_key = planned.direct_key;
    result.direct_key_record = planned.direct_key_record;
    result.portable_key = planned.portable_key;
    return result;
}

// A hit from `cache` or the read-only `layer`, delivered; -v says from
// where and, by the portable key, what was checked.
BuildResult delivered_hit(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
                          const Cache& cache, const LocalLookup& hit, const Reporter& report,
                          BuildClock::time_point start);

// No toolchain here: a hit by the portable key from any cache, or nothing.
std::optional<BuildResult> hit_without_toolchain(const BuildInputs& in, const BuildOptions& o,
                                                 const PlannedBuild& planned, BuildContext& ctx,
                                                 const Reporter& report,
                                                 BuildClock::time_point start,
                                                 PortableLookup& found) {
    Cache cache(in.cache_root);
    found = find_portable(cache, planned.portable_key, in, o, true, ctx, report);
    if (!found.entry) return std::nullopt;
    LocalLookup hit{std::move(found.entry), "", found.layer, found.checked};
    return delivered_hit(in, o, planned, cache, hit, report, start);
}

// The cache an entry came from: the own one, or the read-only `layer`.
Cache serving(const Cache& own, const fs::path& layer) {
    return layer.empty() ? own : Cache(layer, {}, CacheAccess::ReadOnly);
}

void take_delivered(BuildResult& result, const Delivered& delivered, BuildClock::time_point start) {
    result.manifest = delivered.manifest;
    result.library = delivered.library;
    result.seconds_total = seconds_since(start);
}

BuildResult delivered_hit(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
                          const Cache& cache, const LocalLookup& hit, const Reporter& report,
                          BuildClock::time_point start) {
    BuildResult result = planned_result(planned);
    result.cache_hit = true;
    result.key = hit.entry->key;
    result.layer = hit.layer;
    result.checked = hit.checked;
    if (!hit.checked.empty()) report_portable_hit(o, hit.layer, hit.checked, report);
    take_delivered(result, deliver(in, o, serving(cache, hit.layer), *hit.entry, true, report),
                   start);
    return result;
}

// One build of the inputs as read now: prepare, plan, look up, and on a miss
// execute and publish; then deliver.
Attempt build_attempt(const BuildOptions& o, BuildContext& ctx) {
    auto start = BuildClock::now();
    Reporter report(o);
    Trace* trace = ctx.trace;
    const BuildInputs in =
        traced(trace, "prepare", [&] { return or_fatal(prepare(o, ctx, report)); });
    if (trace) trace->set_name(in.name);
    PlannedBuild planned = traced(trace, "plan", [&] {
        PlannedBuild p = plan_build(in, o);
        explain_plan(in, o, p);
        write_planned_compile_commands(in, o);
        return p;
    });
    if (in.toolchain_missing) {
        if (o.dry_run || o.force) fatal(*in.toolchain_missing);
        PortableLookup found;
        auto hit = traced(trace, "look-up", [&] {
            return hit_without_toolchain(in, o, planned, ctx, report, start, found);
        });
        if (!hit) fatal(toolchain_missing_error(in, found));
        return {std::move(*hit), std::nullopt};
    }
    BuildResult result = planned_result(planned);
    if (o.dry_run) {
        dry_run(in, o, planned, ctx, report);
        return {result, std::nullopt};
    }
    Cache cache(in.cache_root);
    LookUp found =
        traced(trace, "look-up", [&] { return look_up(in, o, planned, cache, ctx, report); });
    result.miss_reason = found.miss_reason;
    result.remote_hit = found.remote_hit;
    result.cache_hit = found.entry.has_value();
    result.layer = found.layer;
    result.checked = found.checked;
    if (!found.checked.empty()) report_portable_hit(o, found.layer, found.checked, report);
    std::optional<Published> published;
    if (!found.entry) {
        // Said when it compiles for the default architecture, not on a hit.
        if (!in.arch_fallback.empty()) report.warn(in.arch_fallback);
        Executed built =
            traced(trace, "execute", [&] { return execute(in, o, planned, cache, ctx); });
        if (built.edited) return {result, built.edited};
        result.seconds_compile = built.seconds;
        published = traced(trace, "publish", [&] {
            return publish(in, o, planned, built, cache, found.remote, ctx, report);
        });
    }
    const Entry& entry = found.entry ? *found.entry : published->entry;
    result.key = entry.key;
    const Delivered delivered = traced(trace, "deliver", [&] {
        return deliver(in, o, serving(cache, found.layer), entry, result.cache_hit, report);
    });
    take_delivered(result, delivered, start);
    return {result, std::nullopt};
}

}  // namespace

BuildResult run_build(const BuildOptions& options, BuildContext& ctx) {
    // An editor saving again and again: give up after a few builds.
    constexpr int kAttempts = 3;
    for (int attempt = 1;; ++attempt) {
        Attempt a = build_attempt(options, ctx);
        if (!a.restart) {
            record_request(options, ctx, Reporter(options));  // not for --dry-run
            return a.result;
        }
        if (attempt == kAttempts)
            fatal(Error::make(ErrorKind::Source,
                              *a.restart + " changed while bekc built it, " +
                                  std::to_string(kAttempts) +
                                  " times in a row; build again once it is saved"));
        Reporter(options).warn(*a.restart + " changed while bekc built it; building it again");
    }
}

std::optional<BuildResult> run_build_if_cached(const BuildOptions& o, BuildContext& ctx,
                                               const Reporter& report) {
    auto start = BuildClock::now();
    const BuildInputs in = or_fatal(prepare(o, ctx, report));
    PlannedBuild planned = plan_build(in, o);
    explain_plan(in, o, planned);
    write_planned_compile_commands(in, o);
    std::optional<BuildResult> hit;
    if (in.toolchain_missing) {
        // A miss is the binary's to report.
        PortableLookup found;
        hit = hit_without_toolchain(in, o, planned, ctx, report, start, found);
    } else {
        Cache cache(in.cache_root);
        // A corrupt entry stays for the build that follows the miss, which
        // removes it and says so.
        LocalLookup local = find_local_or_portable(cache, planned, in, o, ctx, report, false);
        if (local.entry) hit = delivered_hit(in, o, planned, cache, local, report, start);
    }
    if (hit) record_request(o, ctx, report);
    return hit;
}

}  // namespace bekc
