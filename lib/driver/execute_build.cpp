#include "driver/phases.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "diag/compile_log.hpp"
#include "driver/fatal.hpp"
#include "graph/link_errors.hpp"
#include "graph/nvcc_split.hpp"
#include "graph/recipe.hpp"
#include "graph/step_keys.hpp"
#include "prep/reporter.hpp"
#include "run/execute.hpp"
#include "run/interrupt.hpp"
#include "run/jobserver.hpp"
#include "store/compile_times.hpp"
#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "store/runtime_headers.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/tool_versions.hpp"
#include "util/error.hpp"

namespace bekc {

BuildDir::~BuildDir() {
    if (path_.empty()) return;
    std::error_code e;
    fs::remove_all(path_, e);
}

namespace {

// A link that failed on undefined symbols: the exported functions never
// defined at their `// @BE` lines, the others with the library that defines
// them, instead of the linker's words (which -v shows too).
std::optional<Error> undefined_symbols_error(const BuildInputs& in, const BuildGraph& graph,
                                             const ProcessResult& r, bool verbose) {
    if (r.status != ProcessStatus::Exited) return std::nullopt;
    auto report = explain_undefined_symbols(r.output, in.files, graph.library.filename().string(),
                                            in.any_cuda(), verbose);
    if (!report) return std::nullopt;
    if (verbose) std::fputs(r.output.c_str(), stderr);
    std::fputs(report->printed.c_str(), stderr);
    return std::move(report->error);
}

// bekc's own code (bekc_rt.o, the entry points) failed to compile: the
// error names it and what it depends on. A full disk is the machine's
// problem, not the compiler's. A compiler that ran and failed is a compile
// error like any other (exit 1): exit 3 says a compiler is missing or cannot
// run.
Error own_code_error(const BuildInputs& in, const ProcessResult& r, const std::string& what) {
    bool full = r.output.find(std::strerror(ENOSPC)) != std::string::npos;
    Error e = Error::make(
        full ? ErrorKind::Cache : ErrorKind::Source,
        "compiling " + what + " with " + in.cxx.path.string() + " failed (" + r.describe() + ")");
    if (!full)
        e.note(
            "bekc compiles it with the host compiler, --std and the compiler's environment "
            "($CPATH, $CPLUS_INCLUDE_PATH, $GCC_EXEC_PREFIX, ...): the errors above come "
            "from one of these");
    return e;
}

// Prints why a step failed, with the compiler's output, and returns the error.
Error step_error(const BuildInputs& in, const BuildGraph& graph, const StepFailure& f,
                 bool verbose) {
    // The step failed because bekc stopped it.
    if (auto running = check_interrupted(); !running) return running.error();
    const Step& step = graph.steps[f.step];
    if (!f.error.empty()) return Error::make(ErrorKind::Cache, f.error);
    const ProcessResult& r = f.result;
    std::string log = verbose ? r.output
                      : step.kind == StepKind::Compile || step.kind == StepKind::NvccPhase
                          ? trim_compile_log(tidy_compile_log(r.output))
                          : trim_compile_log(r.output);
    if (step.kind == StepKind::Link)
        if (auto undefined = undefined_symbols_error(in, graph, r, verbose)) return *undefined;
    std::fputs(log.c_str(), stderr);
    if (r.status == ProcessStatus::SpawnFailed)
        return Error::make(ErrorKind::Toolchain, "cannot run the compiler: " + r.error);
    if (step.kind == StepKind::RuntimeObject)
        return own_code_error(in, r, "bekc's handler support code");
    if (step.kind == StepKind::Compile && !step.unit)
        return own_code_error(in, r, "bekc's handler entry points (bekc_handlers.cpp)");
    // A header of the user's includes XLA's, which bekc adds only for
    // sources that include it themselves.
    if (in.flags.xla_include.empty() && r.output.find("xla/ffi/api/ffi.h") != std::string::npos)
        std::fputs(
            "note: XLA's FFI headers are on the include path only when a source "
            "includes them itself or they are named: pass --xla-include DIR or set "
            "$BEKC_XLA_INCLUDE=DIR (DIR: what jax.ffi.include_dir() prints)\n",
            stderr);
    if (in.nvcc) {
        std::string cccl = missing_cccl_note(*in.nvcc, r.output);
        if (!cccl.empty()) std::fputs(("note: " + cccl + "\n").c_str(), stderr);
    }
    if (step.kind == StepKind::Link) {
        // The linkers name bekc's objects and mangled symbols: say whose.
        std::vector<std::pair<std::string, std::string>> objects;
        for (const auto& s : graph.steps)
            if (s.kind == StepKind::Compile && s.unit && *s.unit < in.files.size())
                objects.emplace_back(s.command.outputs.front(), in.files[*s.unit].path.string());
        std::fputs(link_failure_notes(log, objects).c_str(), stderr);
        return Error::make(ErrorKind::Source, "linking " + graph.library.filename().string() +
                                                  " failed (" + r.describe() + ")");
    }
    return Error::make(ErrorKind::Source, "compilation failed (" + r.describe() + ")");
}

// The planned graph filled in for a run in `dir` with `slots` job slots:
// the cache's runtime as it is now, and the links nvcc needs (made here).
// `link_depfile`: ask the linker for --dependency-file.
BuildGraph fill_in_run(const BuildInputs& in, const GraphRecipe& recipe, const fs::path& dir,
                       int slots, bool link_depfile) {
    GraphDirs dirs = build_dirs(in, dir);
    dirs.link_depfile = link_depfile;
    dirs.device_threads = device_threads_for(in, slots, !dirs.runtime_object_ready);
    if (recipe.any_cuda)
        dirs.nvcc_links = or_fatal(make_nvcc_links(recipe, dirs, in.private_places));
    return or_fatal(fill_in(recipe, dirs));
}

// A linker without --dependency-file (GNU ld before binutils 2.35) fails
// the step that links.
bool linker_lacks_depfile(const BuildGraph& graph, const StepFailure& f) {
    return graph.link_depfile && graph.steps[f.step].kind == StepKind::Link &&
           f.result.status == ProcessStatus::Exited &&
           f.result.output.find("--dependency-file") != std::string::npos;
}

// What the compilers' depfiles and the linker's --dependency-file list.
ReportedDependencies reported_dependencies(const BuildGraph& graph) {
    ReportedDependencies deps;
    for (const auto& s : graph.steps) {
        if (s.depfile.empty()) continue;
        auto text = read_file(s.depfile);
        if (!text)
            fatal(Error::make(ErrorKind::Toolchain,
                              "the compiler wrote no dependency file " + s.depfile.string()));
        for (auto& d : parse_depfile(*text)) deps.compile.push_back(std::move(d));
    }
    if (graph.link_depfile) {
        auto text = read_file(*graph.link_depfile);
        if (!text)
            fatal(Error::make(ErrorKind::Toolchain, "the linker wrote no dependency file " +
                                                        graph.link_depfile->string()));
        deps.link = parse_linker_depfile(*text);
        deps.link_reported = true;
    }
    return deps;
}

// The name a step's duration is remembered under (driver/compile_times.hpp).
std::optional<std::string> timing_name(const BuildInputs& in, const Step& s) {
    if (s.kind == StepKind::RuntimeObject) return "bekc_rt.o";
    if (s.kind != StepKind::Compile || !s.unit || *s.unit >= in.files.size()) return std::nullopt;
    return input_name(in.files[*s.unit].path);
}

// Fills the planned graph in for `dir`, executes it, and returns the
// dependencies the compilers and the linker reported, or why a step failed
// (printed).
std::expected<ReportedDependencies, Error> compile(const BuildInputs& in, const BuildOptions& o,
                                                   const GraphRecipe& recipe, const fs::path& dir,
                                                   BuildContext& ctx) {
    // Under `make -jN` (or a package's build) the slots come from the
    // jobserver, a token at a time (run/jobserver.hpp).
    JobSlots slots = JobSlots::take(jobs_wanted(o), ctx.env);
    if (o.verbose && !slots.refusal().empty())
        std::fprintf(stderr, "bekc: note: %s\n", slots.refusal().c_str());
    CompileTimes times(in.cache_root);
    BuildGraph graph = fill_in_run(in, recipe, dir, slots.count(), true);
    // nvcc's phases, asked once: a run again splits its new graph the same.
    const NvccPhasePlan phases = ask_nvcc_phases(graph, in, ctx.runner, ctx.tools);
    split_nvcc_compiles(graph, phases, in);
    ExecuteOptions eo;
    eo.jobs = slots.count();
    eo.tokens = slots.jobserver();
    eo.echo = o.verbose ? stderr : nullptr;
    eo.trace = ctx.trace;
    eo.expected_seconds = [&](const Step& s) -> std::optional<double> {
        auto name = timing_name(in, s);
        return name ? times.seconds(*name) : std::nullopt;
    };
    // nvcc's per-architecture phases and the host compile come from the
    // step cache when it has them (graph/step_keys.hpp); --force compiles
    // every step again, and what it compiled replaces what the cache held.
    // One StepReuse for each graph executed: it remembers its steps' keys.
    Cache cache(in.cache_root);
    std::optional<StepReuse> steps;
    if (ctx.runner.executes() && !o.force)
        eo.reuse = [&](const Step& s) { return steps->reuse(s); };
    eo.finished = [&](const Step& s, const ProcessResult& r) {
        if (auto name = timing_name(in, s))
            times.record(*name, std::chrono::duration<double>(r.wall_time).count());
        if (ctx.runner.executes()) steps->keep(s);
    };
    // Progress for several inputs ("[2/5] nvcc kernels/csr.cu") on a terminal;
    // with -v every command in full instead.
    eo.progress = !o.quiet && in.files.size() > 1 && ::isatty(STDERR_FILENO);
    auto cache_step = [&](const Step& s) {
        if (s.kind == StepKind::RuntimeHeaders)
            or_fatal(materialize_runtime_headers(in.cache_root));
        if (s.kind == StepKind::RuntimeObject)
            or_fatal(publish_runtime_object(runtime_object_id(in), s.command.outputs.front()));
    };
    auto execute = [&] {
        steps.emplace(cache, in, dir, ctx.cwd, ctx.runner, o.force);
        return execute_graph(graph, ctx.runner, eo, cache_step);
    };
    auto done = execute();
    // Such a linker: the build runs again without the option, its graph
    // filled in again (the runtime the first run left in the cache included).
    if (!done && linker_lacks_depfile(graph, done.error())) {
        graph = fill_in_run(in, recipe, dir, slots.count(), false);
        split_nvcc_compiles(graph, phases, in);
        done = execute();
    }
    if (!done) return std::unexpected(step_error(in, graph, done.error(), o.verbose));
    times.save();
    return reported_dependencies(graph);
}

// The first input whose bytes the compilers may not have read as bekc read
// and scanned them: different now, or written since the compile started
// (and perhaps changed back). The wrappers and the manifest come from bekc's
// read, the code from the compilers': such a library is used by nobody.
std::optional<std::string> input_changed_since_read(const std::vector<SourceFile>& inputs,
                                                    int64_t start_ns) {
    for (const auto& f : inputs) {
        auto now = digest_file(f.path, true);
        if (!now || now->changed || now->text != f.text ||
            std::max(now->stat.mtime_ns, now->stat.ctime_ns) >= start_ns)
            return f.path.string();
    }
    return std::nullopt;
}

}  // namespace

Executed execute(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
                 const Cache& cache, BuildContext& ctx) {
    // The last place for private build directories is under the cache's tmp/.
    (void)cache.dir().open_dir(CacheLayout::tmp(), true);
    // Compilers write into this user's private directory (util/fs.hpp), never
    // into the cache, which others may share: a new directory per build, so
    // no build reads what another process (a compiler a killed bekc left
    // running) may still write there.
    auto private_dir = private_temp_dir(in.private_places, planned.dir_name);
    if (!private_dir) fatal(std::move(private_dir.error().as(ErrorKind::Cache)));
    Executed x{BuildDir(*private_dir)};
    auto start = BuildClock::now();
    x.start_ns = now_ns();
    // The compilers read the inputs again, possibly after a wait for the
    // lock or the remote: the result counts only if they read what was keyed.
    auto compiled = compile(in, o, planned.recipe, x.dir.path(), ctx);
    if (!compiled) {
        // An edit may be why it failed (a wrapper from the old signature).
        if (interrupted_by() || !(x.edited = input_changed_since_read(in.files, x.start_ns)))
            fatal(std::move(compiled.error()));
        return x;
    }
    x.dependencies = std::move(*compiled);
    if ((x.edited = input_changed_since_read(in.files, x.start_ns))) return x;
    // Where the host compiler's system headers and libraries are.
    x.multiarch = ToolFacts(in.cache_root, ctx.runner, in.read_only_caches).multiarch(in.cxx);
    x.seconds = seconds_since(start);
    return x;
}

}  // namespace bekc
