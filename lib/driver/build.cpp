#include "driver/build.hpp"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "codegen/render.hpp"
#include "diag/compile_log.hpp"
#include "driver/build_warnings.hpp"
#include "driver/compile_commands.hpp"
#include "driver/fatal.hpp"
#include "driver/keys.hpp"
#include "driver/link_errors.hpp"
#include "driver/plan_build.hpp"
#include "remote/remote_cache.hpp"
#include "run/execute.hpp"
#include "run/interrupt.hpp"
#include "run/jobserver.hpp"
#include "scan/symbols.hpp"
#include "store/cache.hpp"
#include "store/compile_times.hpp"
#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "store/layout.hpp"
#include "store/lock.hpp"
#include "store/manifest.hpp"
#include "store/runtime_headers.hpp"
#include "toolchain/gpu_detect.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/tool_versions.hpp"
#include "toolchain/xla_headers.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

// A name in a message, quoted, with its control characters escaped.
std::string quoted_name(const std::string& name) {
    return "'" + c_string_escape(name) + "'";
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// Says what the build is doing on stderr, unless -q.
class Reporter {
  public:
    explicit Reporter(const BuildOptions& o) : quiet_(o.quiet), verbose_(o.verbose) {}
    void warn(const std::string& msg) const {
        if (!quiet_) std::fprintf(stderr, "bekc: warning: %s\n", msg.c_str());
    }
    void info(const std::string& msg) const {
        if (verbose_) std::fprintf(stderr, "bekc: %s\n", msg.c_str());
    }

  private:
    bool quiet_, verbose_;
};

// An explicit --arch list, checked before any tool is looked for; empty for
// `auto` and `native`.
std::vector<Arch> explicit_archs(const BuildOptions& o) {
    if (o.arch == "auto" || o.arch == "native") return {};
    std::string err;
    auto archs = parse_arch_list(o.arch, err);
    if (!archs) fatal(Error::make(ErrorKind::Usage, err));
    return *archs;
}

// `auto` and `native`: the GPUs present.
std::vector<Arch> detected_archs(const BuildOptions& o, const fs::path& cache_root,
                                 const Reporter& report, BuildContext& ctx) {
    GpuDetection d = detect_gpus(cache_root, ctx.runner, ctx.tools);
    if (!d.archs.empty()) {
        report.info("--arch " + o.arch + ": " + arch_list_string(d.archs) + " (" + d.how + ")");
        return d.archs;
    }
    if (o.arch == "native")
        fatal(Error::make(ErrorKind::Usage,
                          "--arch native found no GPU (" + d.how +
                              "); name the architectures instead, e.g. --arch sm_80,sm_90"));
    report.warn("--arch auto found no GPU (" + d.how + "); compiling for sm_" +
                std::to_string(kDefaultArch) +
                " plus PTX, which newer GPUs compile at load "
                "time. Pass --arch to choose.");
    return {Arch{kDefaultArch, ""}};
}

// nvcc reads a -Xlinker value as a list split at commas and white space, and
// hands the link to the host compiler through a shell: an argument holding one
// of these characters cannot reach the linker whole from a CUDA build. Empty
// ones are always mistakes.
void check_linker_args(const std::vector<std::string>& args, bool nvcc_links) {
    constexpr std::string_view kNvccSplits = ", \t\n\r\f\v'\"\\;$`&|<>()*?[]{}!";
    for (const auto& a : args) {
        if (a.empty()) fatal(Error::make(ErrorKind::Usage, "--linker-arg is empty"));
        size_t bad = nvcc_links ? a.find_first_of(kNvccSplits) : std::string::npos;
        if (bad == std::string::npos) continue;
        std::string shown = std::isspace(static_cast<unsigned char>(a[bad])) ? "white space"
                            : a[bad] == ','                                  ? "a comma"
                                            : std::string("'") + a[bad] + "'";
        fatal(Error::make(ErrorKind::Usage,
                          "--linker-arg '" + a + "' has " + shown +
                              ", which nvcc splits or hands to a shell, so a CUDA build cannot "
                              "pass it to the linker whole; split it into several --linker-arg "
                              "values or use a path without it"));
    }
}

// nvcc hands the host compiler's and the linker's command lines to a shell:
// -D values and paths inside double quotes, where $ and ` still expand, and
// -Xcompiler values unquoted. What a CUDA build passes to nvcc must not make
// that shell run or expand anything: a checkout named `$(...)` in
// `-D DATADIR=<checkout>/data` would run it, and `$ORIGIN` would vanish.
void check_nvcc_shell_args(const CompileFlags& f) {
    // In double quotes: what expands, and what ends the quotes.
    constexpr std::string_view kQuoted = "$`\"\\\n\r";
    constexpr std::string_view kUnquoted = "$`\"\\\n\r;&|<>()";
    auto is_compiler_option = [](std::string_view flag) {
        return flag == "-Xcompiler" || flag == "--compiler-options";
    };
    auto check = [&](std::string_view option, const std::vector<std::string>& values,
                     std::string_view prefix) {
        for (size_t i = 0; i < values.size(); ++i) {
            const std::string& v = values[i];
            bool unquoted = (i > 0 && is_compiler_option(values[i - 1])) ||
                            v.starts_with("-Xcompiler=") || v.starts_with("--compiler-options=");
            size_t bad = v.find_first_of(unquoted ? kUnquoted : kQuoted);
            if (bad == std::string::npos) continue;
            std::string shown =
                v[bad] == '\n' || v[bad] == '\r' ? "a line break" : std::string("'") + v[bad] + "'";
            fatal(Error::make(ErrorKind::Usage,
                              std::string(option) + " '" + std::string(prefix) + v + "' has " +
                                  shown +
                                  ", which nvcc hands to a shell that would run or expand it; a "
                                  "CUDA build cannot pass it (use a path without it, or a link "
                                  "to it)"));
        }
    };
    check("-D", f.defines, "");
    check("--cuda-flag", f.cuda_flags, "");
    check("--ldflag", f.ldflags, "");
}

// XLA's FFI headers go on the include path when the user named them, or when a
// source includes them (or brainevent's dtypes.h / ffi_compat.h) directly; a
// source that needs them when none can be found is an error at its #include.
std::string resolve_xla_include(const BuildOptions& o, const ScannedInputs& scanned,
                                const EnvLookup& env) {
    const SourceFile* needing = nullptr;
    std::optional<IncludeDirective> include;
    for (const auto& f : scanned.files) {
        for (auto& inc : find_includes(f.text, f.path.string()))
            if (needs_xla_headers(inc)) {
                needing = &f;
                include = std::move(inc);
                break;
            }
        if (needing) break;
    }
    // Looking for a jaxlib reads directories: only when a source needs one or
    // the user named the headers, not on every build (a cache hit included).
    if (!needing && !o.xla_include && !env("BEKC_XLA_INCLUDE")) return {};
    std::optional<XlaHeaders> found = or_fatal(find_xla_headers(o.xla_include, env));
    if (needing && !found) {
        std::fputs(missing_xla_headers_message(*include, needing->text).c_str(), stderr);
        fatal(Error::make(ErrorKind::Source, ""));
    }
    return found && (needing || found->explicit_choice) ? found->dir.string() : std::string();
}

BuildInputs prepare(const BuildOptions& o, BuildContext& ctx, const Reporter& report) {
    BuildInputs in;
    if (o.flags.opt_level < 0 || o.flags.opt_level > 3)
        fatal(Error::make(ErrorKind::Usage,
                          "-O" + std::to_string(o.flags.opt_level) + ": use -O0 to -O3"));
    auto paths = or_fatal(expand_inputs(o.inputs));
    in.name = o.name.empty() ? paths.front().stem().string() : o.name;
    check_name_lengths(in.name, o.name.empty() ? "the first input's stem" : "--name",
                       o.target_prefix);
    if (std::string problem = module_name_problem(in.name); !problem.empty())
        fatal(Error::make(ErrorKind::Usage,
                          "module name " + quoted_name(in.name) +
                              (o.name.empty() ? " (the first input's file name) " : " ") + problem +
                              "; choose another with --name"));
    in.target_prefix = o.target_prefix.empty() ? in.name : o.target_prefix;
    if (std::string problem = target_prefix_problem(in.target_prefix); !problem.empty())
        fatal(Error::make(ErrorKind::Usage,
                          "--target-prefix " + quoted_name(in.target_prefix) + " " + problem));
    std::vector<ExplicitSpec> specs = collect_explicit_specs(o.functions, o.functions_json);
    ScannedInputs scanned = scan_inputs(paths, specs);
    if (has_errors(scanned.diagnostics)) {
        std::fputs(render_all(scanned.diagnostics).c_str(), stderr);
        fatal(Error::make(ErrorKind::Source, ""));
    }
    bool any_cuda = false;
    for (const auto& f : scanned.files) any_cuda |= f.cuda;
    if (any_cuda) in.archs = explicit_archs(o);
    in.cache_root = or_fatal(resolve_cache_root(o.cache_dir, ctx.env));
    set_private_dir_fallback(in.cache_root / CacheLayout::private_builds(::getuid()));
    in.cxx = or_fatal(find_cxx(o.cxx, ctx.tools));
    if (any_cuda) {
        NvccChoice nvcc = or_fatal(find_nvcc(
            NvccRequest{o.nvcc, o.brainevent_nvcc, o.nvcc_prefer, o.python_sites}, ctx.tools));
        in.nvcc = nvcc.tool;
        in.nvcc_how = nvcc.how;
        in.nvcc_wheels = pip_toolkit_wheels(nvcc.tool);
        if (in.archs.empty()) in.archs = detected_archs(o, in.cache_root, report, ctx);
    }
    static_cast<CompileFlags&>(in.flags) = o.flags;
    for (auto& d : in.flags.include_dirs) d = (ctx.cwd / d).string();
    for (const auto& w : missing_include_dir_warnings(o.flags.include_dirs, in.flags.include_dirs))
        report.warn(w);
    if (!o.allow_default_stream && !o.quiet)
        std::fputs(render_all(default_stream_warnings(scanned.files)).c_str(), stderr);
    check_linker_args(in.flags.linker_args, any_cuda);
    if (any_cuda) check_nvcc_shell_args(in.flags);
    in.flag_files = or_fatal(read_flag_files(in.flags, ctx.cwd));
    in.flags.xla_include = resolve_xla_include(o, scanned, ctx.env);
    in.launcher = or_fatal(find_launcher(o.launcher, ctx.tools));
    ToolFacts facts(in.cache_root, ctx.runner);
    if (in.nvcc) in.nvcc_version = facts.version(*in.nvcc);
    in.cxx_version = facts.version(in.cxx);
    in.env = read_compiler_env(ctx.raw_env, any_cuda, ctx.cwd);
    if (auto base = ctx.env("BEKC_BASE_DIR"); base && !base->empty())
        in.base = BaseDir(ctx.cwd / *base);
    in.files = std::move(scanned.files);
    return in;
}

// -j, or one job per core.
int jobs_wanted(const BuildOptions& o) {
    return o.jobs > 0 ? o.jobs
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

struct Compiled {
    ReportedDependencies dependencies;
};

// A link that failed only on exported functions that are declared but never
// defined: one error at each `// @BE` line, instead of the linker's words
// (which -v shows too).
void link_failed(const BuildInputs& in, const BuildGraph& graph, const ProcessResult& r,
                 bool verbose) {
    if (r.status != ProcessStatus::Exited) return;
    UndefinedExports undefined = undefined_exports(r.output, in.files);
    if (undefined.errors.empty() || !undefined.others.empty()) return;
    if (verbose) std::fputs(r.output.c_str(), stderr);
    std::fputs(render_all(undefined.errors).c_str(), stderr);
    fatal(Error::make(ErrorKind::Source, "linking " + graph.library.filename().string() +
                                             " failed: an exported function is never defined"));
}

// Says why a step failed, with the compiler's output, and throws.
[[noreturn]] void step_failed(const BuildInputs& in, const BuildGraph& graph, const StepFailure& f,
                              bool verbose) {
    // The step failed because bekc stopped it.
    throw_if_interrupted();
    const Step& step = graph.steps[f.step];
    if (!f.error.empty()) fatal(Error::make(ErrorKind::Cache, f.error));
    const ProcessResult& r = f.result;
    std::string log = verbose ? r.output
                      : step.kind == StepKind::Compile
                          ? trim_compile_log(tidy_compile_log(r.output))
                          : trim_compile_log(r.output);
    if (step.kind == StepKind::Link) link_failed(in, graph, r, verbose);
    std::fputs(log.c_str(), stderr);
    if (r.status == ProcessStatus::SpawnFailed)
        fatal(Error::make(ErrorKind::Toolchain, "cannot run the compiler: " + r.error));
    if (step.kind == StepKind::RuntimeObject) {
        // A full disk is the machine's problem, not the compiler's.
        bool full = r.output.find(std::strerror(ENOSPC)) != std::string::npos;
        fatal(Error::make(full ? ErrorKind::Cache : ErrorKind::Toolchain,
                          "compiling bekc's handler support code with " + in.cxx.path.string() +
                              " failed (" + r.describe() + ")"));
    }
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
        fatal(Error::make(ErrorKind::Source, "linking " + graph.library.filename().string() +
                                                 " failed (" + r.describe() + ")"));
    }
    fatal(Error::make(ErrorKind::Source, "compilation failed (" + r.describe() + ")"));
}

// Executes the build graph in `dir` and returns the dependencies the
// compilers and the linker reported.
Compiled compile(const BuildInputs& in, const BuildOptions& o, const fs::path& dir,
                 BuildContext& ctx) {
    Runner& runner = ctx.runner;
    // Under `make -jN` the slots come from make's jobserver (run/jobserver.hpp).
    JobSlots slots = JobSlots::take(jobs_wanted(o), ctx.env);
    GraphPaths paths = graph_paths(in, dir);
    paths.nvcc_safe_paths = true;
    paths.device_threads = device_threads_for(in, slots.count(), !paths.runtime_object_ready);
    BuildGraph graph = plan_graph(in, paths);
    ExecuteOptions eo;
    eo.jobs = slots.count();
    eo.echo = o.verbose ? stderr : nullptr;
    CompileTimes times(in.cache_root);
    auto timing_name = [&](const Step& s) -> std::optional<std::string> {
        if (s.kind == StepKind::RuntimeObject) return "bekc_rt.o";
        if (!s.unit || *s.unit >= in.files.size()) return std::nullopt;
        return fs::absolute(in.files[*s.unit].path).lexically_normal().string();
    };
    eo.expected_seconds = [&](const Step& s) -> std::optional<double> {
        auto name = timing_name(s);
        return name ? times.seconds(*name) : std::nullopt;
    };
    eo.finished = [&](const Step& s, const ProcessResult& r) {
        if (auto name = timing_name(s))
            times.record(*name, std::chrono::duration<double>(r.wall_time).count());
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
    auto done = execute_graph(graph, runner, eo, cache_step);
    // A linker without --dependency-file (GNU ld before binutils 2.35) fails
    // the step that links: the build runs again without the option.
    if (!done && graph.link_depfile && graph.steps[done.error().step].kind == StepKind::Link &&
        done.error().result.status == ProcessStatus::Exited &&
        done.error().result.output.find("--dependency-file") != std::string::npos) {
        paths = graph_paths(in, dir);
        paths.nvcc_safe_paths = true;
        paths.link_depfile = false;
        graph = plan_graph(in, paths);
        done = execute_graph(graph, runner, eo, cache_step);
    }
    if (!done) step_failed(in, graph, done.error(), o.verbose);
    times.save();
    Compiled c;
    for (const auto& s : graph.steps) {
        if (s.kind != StepKind::Compile) continue;
        auto text = read_file(s.depfile);
        if (!text)
            fatal(Error::make(ErrorKind::Toolchain,
                              "the compiler wrote no dependency file " + s.depfile.string()));
        for (auto& d : parse_depfile(*text)) c.dependencies.compile.push_back(std::move(d));
    }
    if (graph.link_depfile) {
        auto text = read_file(*graph.link_depfile);
        if (!text)
            fatal(Error::make(ErrorKind::Toolchain, "the linker wrote no dependency file " +
                                                        graph.link_depfile->string()));
        c.dependencies.link = parse_linker_depfile(*text);
        c.dependencies.link_reported = true;
    }
    return c;
}

// The first dependency or flag file written since the compile started, if any.
// File timestamps come from a coarse clock that can only lag, so a file
// written before the start never looks newer; sources written just before
// bekc runs (as load_cpp_inline does) are not flagged. A dependency is
// judged by the stat classify_dependencies took when it read the bytes that
// were keyed (a later write changes nothing keyed), or flagged when it
// changed while being read.
std::optional<std::string> changed_during_build(const DependencySet& deps,
                                                const std::vector<FlagFile>& flag_files,
                                                int64_t start_ns) {
    auto recent = [&](const std::optional<FileStat>& st) {
        return !st || std::max(st->mtime_ns, st->ctime_ns) >= start_ns;
    };
    if (deps.changed_while_read) return deps.changed_while_read;
    for (const auto& d : deps.direct.dependencies)
        if (recent(d.stat ? d.stat : stat_file(d.path))) return d.path.string();
    // A header that would be found first, created while the compiler ran:
    // it may have come after the compiler looked.
    for (const auto& p : deps.present_shadows)
        if (recent(stat_file(p))) return p.string();
    // Read before the lock and the remote lookup, and again by the tools.
    return flag_file_changed(flag_files, start_ns);
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

// `-o DIR`: the library and the chosen manifest at a stable path. A hard link
// when the cache is on the same filesystem, else a copy; both appear by rename,
// manifest last, so a reader of DIR never sees a manifest without its library.
void place_outputs(const fs::path& dir, BuildResult& result) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fatal(Error::make(ErrorKind::Usage, "-o " + dir.string() + ": " + ec.message()));
    fs::path lib = dir / result.library.filename();
    fs::path tmp = dir / (".bekc." + unique_suffix());
    fs::create_hard_link(result.library, tmp, ec);
    if (ec) {
        ec.clear();
        fs::copy_file(result.library, tmp, ec);
    }
    if (ec || ::rename(tmp.c_str(), lib.c_str()) != 0) {
        fs::remove(tmp, ec);
        fatal(Error::make(ErrorKind::Cache, "cannot place " + lib.string()));
    }
    // rename(2) between two links to one inode succeeds and does nothing,
    // leaving the temporary link behind: remove it (a no-op otherwise).
    fs::remove(tmp, ec);
    auto manifest = read_file(result.manifest);
    if (!manifest) fatal(Error::make(ErrorKind::Cache, manifest.error().message));
    if (auto w = write_atomic(dir / "manifest.json", *manifest); !w)
        fatal(Error::make(ErrorKind::Cache, "-o: " + w.error().message));
    result.manifest = dir / "manifest.json";
    result.library = lib;
}

// Make syntax; spaces and '$' escaped as Make wants them.
std::string make_escape(const std::string& path) {
    std::string out;
    for (char c : path) {
        if (c == ' ' || c == '#') out += '\\';
        if (c == '$') out += '$';
        out += c;
    }
    return out;
}

void write_depfile(const fs::path& file, const Cache& cache, const Entry& entry,
                   const std::vector<SourceFile>& inputs, const fs::path& target,
                   const BaseDir& base) {
    std::vector<std::string> prereqs;
    for (const auto& f : inputs)
        prereqs.push_back(fs::absolute(f.path).lexically_normal().string());
    if (auto text = cache.dir().read(CacheLayout::entry(entry.key) / kDependenciesFile)) {
        auto j = nlohmann::json::parse(*text, nullptr, false);
        if (j.is_array())
            for (const auto& h : j)
                if (h.is_string())
                    if (auto here = base.show(h.get<std::string>())) prereqs.push_back(*here);
    }
    std::string out = make_escape(target.string()) + ":";
    for (const auto& p : prereqs) out += " \\\n  " + make_escape(p);
    out += "\n";
    // Every header also gets an empty rule, so deleting one does not break make.
    for (size_t i = inputs.size(); i < prereqs.size(); ++i) {
        out += '\n';
        out += make_escape(prereqs[i]);
        out += ":\n";
    }
    // Replacing the path by rename would replace a device or a FIFO itself.
    if (auto regular = check_writable_regular(file); !regular)
        fatal(Error::make(ErrorKind::Usage, "--depfile: " + regular.error().message));
    if (auto w = write_atomic(file, out); !w)
        fatal(Error::make(ErrorKind::Cache, "--depfile: " + w.error().message));
}

}  // namespace

BuildInputs prepare_build(const BuildOptions& options, BuildContext& context) {
    return prepare(options, context, Reporter(options));
}

BuildResult run_build(const BuildOptions& options) {
    ProcessRunner runner;
    BuildContext context{runner};
    return run_build(options, context);
}

namespace {

// One build of the inputs as read now. Sets `restart` (and returns nothing
// of use) when an input changed between bekc's read and the compilers'.
BuildResult build_attempt(const BuildOptions& options, BuildContext& ctx,
                          std::optional<std::string>& restart) {
    auto start = Clock::now();
    const BuildOptions& o = options;
    Reporter report(o);
    BuildInputs in = prepare(o, ctx, report);
    BuildResult result;
    for (const auto& f : in.files)
        for (const auto& fn : f.functions)
            result.targets.push_back(target_name(in.target_prefix, fn.name));

    KeyBuilder direct = direct_key_builder(in);
    std::string direct_key = direct.digest();
    result.direct_key = direct_key;
    result.direct_key_record = direct.explain();
    if (o.explain_key) {
        // Why this nvcc: not hashed (the same binary found another way builds
        // the same library), so on stderr, beside the records.
        if (in.nvcc)
            std::fprintf(stderr, "bekc: nvcc %s (chosen by %s)\n", in.nvcc->path.c_str(),
                         in.nvcc_how.c_str());
        std::fputs(direct.explain().c_str(), stdout);
    }
    if (o.compile_commands && !o.dry_run)
        write_compile_commands(fs::path(*o.compile_commands), in,
                               or_fatal(materialize_runtime_headers(in.cache_root)));
    // Compilers write into this user's private directory (util/fs.hpp), never
    // into the cache, which others may share: a new directory per build, so
    // no build reads what another process (a compiler a killed bekc left
    // running) may still write there.
    const std::string dir_name = build_dir_name(in, direct_key);
    if (o.dry_run) {
        // The graph a build would execute, step by step, from the same plan.
        DryRunRunner dry;
        ExecuteOptions eo;
        eo.echo = stdout;
        eo.jobs = jobs_wanted(o);
        GraphPaths paths = graph_paths(in, private_user_path() / (dir_name + ".XXXXXX"));
        paths.device_threads = device_threads_for(in, eo.jobs, !paths.runtime_object_ready);
        (void)execute_graph(plan_graph(in, paths), dry, eo);
        return result;
    }
    Cache cache(in.cache_root);
    // After publishing: the automatic size limit (store/cache.hpp, amortised).
    auto keep_under_limit = [&](const Entry& published) {
        auto limit = cache.size_limit(ctx.env);
        if (!limit) return report.warn(limit.error().message);
        if (auto kept = cache.enforce_limit(published, direct_key, limit->bytes); !kept)
            report.warn(kept.error().message);
    };
    auto finish = [&](const Entry& e, bool hit) {
        // A cache a team prebuilt and mounted read-only, or another user's:
        // hits are served as they are, and what a hit would record is skipped.
        if (hit && ::access(in.cache_root.c_str(), W_OK) != 0)
            report.info("the cache " + in.cache_root.string() +
                        " is read-only here: serving hits from it, writing nothing");
        result.cache_hit = hit;
        result.manifest = e.manifest(!o.no_cuda_graph);
        result.library = e.library;
        if (o.output_dir) place_outputs(fs::path(*o.output_dir), result);
        if (o.depfile)
            write_depfile(fs::path(*o.depfile), cache, e, in.files, result.manifest, in.base);
        result.seconds_total = seconds_since(start);
        return result;
    };
    auto try_hit = [&]() -> std::optional<Entry> {
        if (o.force) {
            result.miss_reason = "--force";
            return std::nullopt;
        }
        DirectLookup d = cache.lookup_direct(direct_key, in.base);
        if (!d.key) {
            result.miss_reason = d.why_not;
            return std::nullopt;
        }
        auto e = cache.lookup(*d.key);
        if (!e) {
            result.miss_reason = e.error().reason.empty() ? "entry missing" : e.error().reason;
            if (e.error().kind == Miss::Kind::Corrupt)
                report.warn("cache entry " + *d.key + " is corrupt (" + e.error().reason +
                            "); rebuilding");
            return std::nullopt;
        }
        return *e;
    };
    if (auto e = try_hit()) return finish(*e, true);
    report.info("cache miss: " + result.miss_reason);

    // One compile per direct key: others building the same inputs wait here
    // and then find the entry.
    auto lock = cache.lock(CacheLayout::lock(direct_key));
    throw_if_interrupted();
    if (!lock) fatal(Error::make(ErrorKind::Cache, lock.error().message));
    if (auto e = try_hit()) return finish(*e, true);

    std::optional<RemoteCache> remote;
    if (auto config = remote_config(o.remote_cache, o.remote_read_only, ctx.env))
        remote.emplace(
            *config, [&](const std::string& m) { report.warn(m); }, ctx.runner, ctx.tools);
    if (remote && !o.force) {
        if (auto e = remote->fetch(cache, direct_key, in.base)) {
            result.miss_reason = "local miss, remote hit";
            result.remote_hit = true;
            keep_under_limit(*e);
            return finish(*e, true);
        }
    }

    // Ctrl-C during the remote lookup: compile nothing.
    throw_if_interrupted();
    // The last place for private build directories is under the cache's tmp/.
    (void)cache.dir().open_dir(CacheLayout::tmp(), true);
    auto private_dir = private_temp_dir(dir_name);
    if (!private_dir) fatal(Error::make(ErrorKind::Cache, private_dir.error().message));
    fs::path dir = *private_dir;
    struct Cleanup {
        fs::path dir;
        ~Cleanup() {
            std::error_code e;
            fs::remove_all(dir, e);
        }
    } cleanup{dir};

    auto compile_start = Clock::now();
    int64_t compile_start_ns = now_ns();
    // The compilers read the inputs again, possibly after a wait for the
    // lock or the remote: the result counts only if they read what was keyed.
    auto edited = [&] { return input_changed_since_read(in.files, compile_start_ns); };
    Compiled c;
    try {
        c = compile(in, o, dir, ctx);
    } catch (const FatalError&) {
        // An edit may be why it failed (a wrapper from the old signature).
        if (interrupted_by() || !(restart = edited())) throw;
        return result;
    }
    if ((restart = edited())) return result;
    // Where the host compiler's system headers and libraries are: only a
    // miss sorts what the compilers read.
    in.multiarch = ToolFacts(in.cache_root, ctx.runner).multiarch(in.cxx);
    result.seconds_compile = seconds_since(compile_start);
    DependencySet deps =
        classify_dependencies(c.dependencies, in, runtime_include_dir(in.cache_root), dir);
    KeyBuilder full = full_key_builder(direct_key, deps, in.base);
    if (o.explain_key) std::fputs(full.explain().c_str(), stdout);
    std::string key = full.digest();
    deps.direct.key = key;
    // A file saved while the compiler ran may be newer than what was compiled,
    // and its new bytes are in the key: this result is used, never cached.
    std::optional<std::string> changed =
        changed_during_build(deps, in.flag_files, compile_start_ns);
    if (changed) {
        report.warn(*changed + " changed during the build; the result is used but not cached");
        key = KeyBuilder("uncached").add("build_key", key).add("nonce", unique_suffix()).digest();
    }

    fs::path built = dir / in.library_file();
    auto outcome = cache.get_or_build(
        key,
        [&](const Staging& staging) -> std::expected<void, Error> {
            auto sha = sha256_file(built);
            if (!sha) return std::unexpected(sha.error());
            if (auto moved = staging.move_in(in.library_file(), built); !moved) return moved;
            ManifestOutput m{key, *sha};
            if (auto w = staging.write(kManifestNoGraphFile,
                                       render_manifest(manifest_inputs(in), m, false));
                !w)
                return w;
            // Relative to the base directory, for --depfile in any checkout.
            nlohmann::json headers = nlohmann::json::array();
            for (const auto& h : deps.user_headers) headers.push_back(in.base.hide(h));
            if (auto w = staging.write(kDependenciesFile, headers.dump()); !w) return w;
            return staging.write(kManifestFile, render_manifest(manifest_inputs(in), m, true));
        },
        o.force);
    if (!outcome) fatal(Error::make(ErrorKind::Cache, outcome.error().message));
    // --force rebuilt an entry that existed under the same key: the same
    // inputs must give the same library, or the key missed one of them.
    // Both digests are the seals': publishing hashed the new library.
    if (outcome->replaced_sha256) {
        const std::string& now = outcome->entry.library_sha256;
        if (now != *outcome->replaced_sha256)
            report.warn("--force rebuilt cache entry " + key +
                        " and the library differs from the one it replaced (SHA-256 " +
                        outcome->replaced_sha256->substr(0, 16) + "... before, " +
                        now.substr(0, 16) +
                        "... now) although the key is unchanged: an input bekc does not "
                        "key changed, or the compiler is not deterministic; please report it");
    }
    if (!outcome->repaired.empty())
        report.warn("replaced a corrupt cache entry: " + outcome->repaired);
    if (changed) return finish(outcome->entry, false);
    if (auto r = cache.record_direct(direct_key, deps.direct, in.base); !r)
        report.warn("could not record dependencies for fast hits: " + r.error().message);
    if (!outcome->hit) keep_under_limit(outcome->entry);
    if (remote) remote->publish(cache, outcome->entry, direct_key, deps.direct, in.base);
    return finish(outcome->entry, false);
}

}  // namespace

BuildResult run_build(const BuildOptions& options, BuildContext& ctx) {
    // An editor saving again and again: give up after a few builds.
    constexpr int kAttempts = 3;
    for (int attempt = 1;; ++attempt) {
        std::optional<std::string> restart;
        BuildResult result = build_attempt(options, ctx, restart);
        if (!restart) return result;
        if (attempt == kAttempts)
            fatal(Error::make(ErrorKind::Source,
                              *restart + " changed while bekc built it, " +
                                  std::to_string(kAttempts) +
                                  " times in a row; build again once it is saved"));
        Reporter(options).warn(*restart + " changed while bekc built it; building it again");
    }
}

}  // namespace bekc
