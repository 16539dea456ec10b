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

#include "codegen/wrapper.hpp"
#include "driver/compile_commands.hpp"
#include "driver/compile_log.hpp"
#include "driver/gpu_detect.hpp"
#include "driver/keys.hpp"
#include "driver/manifest.hpp"
#include "driver/runtime_headers.hpp"
#include "driver/safe_paths.hpp"
#include "driver/tool_versions.hpp"
#include "driver/xla_headers.hpp"
#include "plan/compile_plan.hpp"
#include "plan/inputs.hpp"
#include "remote/remote_cache.hpp"
#include "run/parallel.hpp"
#include "store/cache.hpp"
#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "store/layout.hpp"
#include "store/lock.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

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

std::vector<Arch> resolve_archs(const BuildOptions& o, const fs::path& cache_root,
                                const Reporter& report) {
    if (o.arch != "auto" && o.arch != "native") {
        std::string err;
        auto archs = parse_arch_list(o.arch, err);
        if (!archs) throw FatalError("bekc: error: " + err, kExitUsage);
        return *archs;
    }
    GpuDetection d = detect_gpus(cache_root);
    if (!d.archs.empty()) {
        report.info("--arch " + o.arch + ": " + arch_list_string(d.archs) + " (" + d.how + ")");
        return d.archs;
    }
    if (o.arch == "native")
        throw FatalError("bekc: error: --arch native found no GPU (" + d.how +
                             "); name the architectures instead, e.g. --arch sm_80,sm_90",
                         kExitUsage);
    report.warn("--arch auto found no GPU (" + d.how + "); compiling for sm_" +
                std::to_string(kDefaultArch) +
                " plus PTX, which newer GPUs compile at load "
                "time. Pass --arch to choose.");
    return {Arch{kDefaultArch, ""}};
}

PlanFlags plan_flags(const BuildOptions& o) {
    PlanFlags f;
    f.opt_level = o.opt_level;
    f.fast_math = o.fast_math;
    f.cxx_std = o.cxx_std;
    for (const auto& d : o.include_dirs) f.include_dirs.push_back(fs::absolute(d).string());
    f.defines = o.defines;
    f.cuda_flags = o.cuda_flags;
    f.cxx_flags = o.cxx_flags;
    f.ldflags = o.ldflags;
    f.linker_args = o.linker_args;
    return f;
}

// nvcc reads a -Xlinker value as a list split at commas and white space, and
// hands the link to the host compiler through a shell: an argument holding one
// of these characters cannot reach the linker whole from a CUDA build. Empty
// ones are always mistakes.
void check_linker_args(const std::vector<std::string>& args, bool nvcc_links) {
    constexpr std::string_view kNvccSplits = ", \t\n\r\f\v'\"\\;$`&|<>()*?[]{}!";
    for (const auto& a : args) {
        if (a.empty()) throw FatalError("bekc: error: --linker-arg is empty", kExitUsage);
        size_t bad = nvcc_links ? a.find_first_of(kNvccSplits) : std::string::npos;
        if (bad == std::string::npos) continue;
        std::string shown = std::isspace(static_cast<unsigned char>(a[bad])) ? "white space"
                            : a[bad] == ','                                  ? "a comma"
                                            : std::string("'") + a[bad] + "'";
        throw FatalError("bekc: error: --linker-arg '" + a + "' has " + shown +
                             ", which nvcc splits or hands to a shell, so a CUDA build cannot "
                             "pass it to the linker whole; split it into several --linker-arg "
                             "values or use a path without it",
                         kExitUsage);
    }
}

// XLA's FFI headers go on the include path when the user named them, or when a
// source includes them (or brainevent's dtypes.h / ffi_compat.h) directly; a
// source that needs them when none can be found is an error at its #include.
std::string resolve_xla_include(const BuildOptions& o, const ScannedInputs& scanned) {
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
    if (!needing && !o.xla_include && !system_env()("BEKC_XLA_INCLUDE")) return {};
    std::optional<XlaHeaders> found = find_xla_headers(o.xla_include, system_env());
    if (needing && !found) {
        std::fputs(missing_xla_headers_message(*include, needing->text).c_str(), stderr);
        throw FatalError("", kExitSourceError);
    }
    return found && (needing || found->explicit_choice) ? found->dir.string() : std::string();
}

// Everything decided before anything is compiled.
struct Prepared {
    BuildOptions options;
    ScannedInputs scanned;
    fs::path cache_root;
    std::optional<Tool> nvcc;
    Tool cxx;
    std::vector<Arch> archs;
    PlanFlags flags;
    std::optional<fs::path> launcher;
    std::string library_file;
    KeyInputs key_inputs;
};

Prepared prepare(const BuildOptions& in, const Reporter& report) {
    Prepared p;
    p.options = in;
    BuildOptions& o = p.options;
    if (o.opt_level < 0 || o.opt_level > 3)
        throw FatalError("bekc: error: -O" + std::to_string(o.opt_level) + ": use -O0 to -O3",
                         kExitUsage);
    auto paths = expand_inputs(o.inputs);
    if (o.name.empty()) o.name = paths.front().stem().string();
    check_name_lengths(o.name, in.name.empty() ? "the first input's stem" : "--name",
                       o.target_prefix);
    if (!is_cxx_identifier(o.name))
        throw FatalError("bekc: error: module name '" + o.name +
                             "' must be an ASCII C++ identifier (it names the library and the "
                             "targets); choose one with --name",
                         kExitUsage);
    if (o.target_prefix.empty()) o.target_prefix = o.name;
    for (char c : o.target_prefix)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'))
            throw FatalError("bekc: error: --target-prefix '" + o.target_prefix +
                                 "' may contain only ASCII letters, digits, '_' and '.'",
                             kExitUsage);
    std::vector<ExplicitSpec> specs = collect_explicit_specs(o.functions, o.functions_json);
    p.scanned = scan_inputs(paths, specs);
    if (has_errors(p.scanned.diagnostics)) {
        std::fputs(render_all(p.scanned.diagnostics).c_str(), stderr);
        throw FatalError("", kExitSourceError);
    }
    bool any_cuda = false;
    for (const auto& f : p.scanned.files) any_cuda |= f.cuda;
    p.cache_root = resolve_cache_root(o.cache_dir);
    ToolLookup lookup = ToolLookup::system();
    p.cxx = find_cxx(o.cxx, lookup);
    if (any_cuda) {
        p.nvcc = find_nvcc(o.nvcc, lookup);
        p.archs = resolve_archs(o, p.cache_root, report);
    }
    p.flags = plan_flags(o);
    check_linker_args(p.flags.linker_args, any_cuda);
    p.flags.xla_include = resolve_xla_include(o, p.scanned);
    p.launcher = find_launcher(o.launcher, lookup);
    p.library_file = "lib" + o.name + ".so";
    std::error_code no_cwd;
    p.key_inputs = {o.name,
                    o.target_prefix,
                    &p.scanned.files,
                    p.nvcc,
                    p.cxx,
                    p.nvcc ? remembered_tool_version(*p.nvcc, p.cache_root) : "",
                    remembered_tool_version(p.cxx, p.cache_root),
                    p.archs,
                    p.flags,
                    std::move(specs),
                    read_compiler_env(process_environment(), any_cuda, fs::current_path(no_cwd))};
    return p;
}

struct Compiled {
    fs::path dir;  // private build directory holding the library
    ReportedDependencies dependencies;
};

// Generates wrappers, runs the plan in `dir`, and returns the dependencies
// the compilers reported.
Compiled compile(const Prepared& p, const fs::path& dir, const fs::path& runtime_include,
                 bool dry_run) {
    PlanRequest req;
    req.nvcc = p.nvcc;
    req.cxx = p.cxx;
    req.archs = p.archs;
    req.flags = p.flags;
    req.runtime_include = runtime_include;
    if (p.nvcc && !dry_run) {
        req.runtime_include = safe_path_for_nvcc(runtime_include);
        for (auto& d : req.flags.include_dirs) d = safe_path_for_nvcc(d).string();
        if (!req.flags.xla_include.empty())
            req.flags.xla_include = safe_path_for_nvcc(req.flags.xla_include).string();
    }
    req.library = dir / p.library_file;
    req.launcher = p.launcher;
    std::string cxx_env;
    for (const auto& [name, value] : p.key_inputs.env.values)
        for (const auto& var : kCompilerEnv)
            if (var.name == name && var.reader == EnvReader::HostCompiler)
                cxx_env += name + "=" + value + "\n";
    RuntimeObjectRequest rt{p.cache_root,     runtime_include, p.cxx.path.string(),
                            p.cxx.identity(), p.flags.cxx_std, cxx_env};
    req.runtime_object =
        dry_run ? runtime_object_path(rt) : ensure_runtime_object(rt, p.options.verbose);
    if (p.nvcc && !dry_run)
        req.runtime_object =
            safe_path_for_nvcc(req.runtime_object->parent_path()) / req.runtime_object->filename();
    for (size_t i = 0; i < p.scanned.files.size(); ++i) {
        const SourceFile& f = p.scanned.files[i];
        std::string wrapper_name =
            std::to_string(i) + "_" + f.path.stem().string() + ".bekc" + (f.cuda ? ".cu" : ".cpp");
        fs::path wrapper = dir / wrapper_name;
        WrapperRequest w{fs::absolute(f.path).lexically_normal().string(), f.path.string(),
                         wrapper.string(), p.options.target_prefix, f.functions};
        if (!dry_run)
            if (auto written = write_atomic(wrapper, render_wrapper(w)); !written)
                throw FatalError("bekc: error: " + written.error(), kExitCache);
        req.units.push_back({wrapper, f.cuda, f.path.string()});
    }
    // The linker lists the files it read. nvcc gets the path through the same
    // plain-named link as the others and splits -Xlinker values at commas: a
    // path with one is not asked for, and the flags stand in (keys.cpp).
    fs::path link_depfile = dir / "link.d";
    fs::path link_depfile_arg =
        p.nvcc && !dry_run ? safe_path_for_nvcc(dir) / "link.d" : link_depfile;
    if (!p.nvcc || link_depfile_arg.string().find(',') == std::string::npos)
        req.link_depfile = link_depfile_arg;
    BuildPlan plan = make_build_plan(req);
    if (dry_run) {
        for (const auto& s : plan.compiles) std::printf("%s\n", display_command(s.command).c_str());
        if (plan.link) std::printf("%s\n", display_command(*plan.link).c_str());
        return {dir, {}};
    }
    std::vector<Command> commands;
    for (const auto& s : plan.compiles) commands.push_back(s.command);
    bool verbose = p.options.verbose;
    int jobs = p.options.jobs > 0
                   ? p.options.jobs
                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // Progress for several inputs ("[2/5] nvcc kernels/csr.cu") on a terminal;
    // with -v every command in full instead.
    bool progress = !p.options.quiet && commands.size() > 1 && ::isatty(STDERR_FILENO);
    size_t started = 0;
    auto on_progress = [&](const ProgressEvent& e) {
        if (e.kind != ProgressEvent::Kind::Started) return;
        ++started;
        if (verbose)
            std::fprintf(stderr, "%s\n", display_command(e.command).c_str());
        else if (progress)
            std::fprintf(stderr, "[%zu/%zu] %s\n", started, commands.size(),
                         e.command.description.c_str());
    };
    auto results = run_parallel(commands, jobs, on_progress);
    // A linker without --dependency-file (GNU ld before binutils 2.35) fails
    // the command that links: that command runs again without the option.
    auto linker_refused = [&](const ProcessResult& r) {
        return req.link_depfile && !r.ok() && r.status != ProcessStatus::NotRun &&
               r.status != ProcessStatus::SpawnFailed &&
               r.output.find("--dependency-file") != std::string::npos;
    };
    if (!plan.link && !results.empty() && linker_refused(results.front())) {
        req.link_depfile.reset();
        plan = make_build_plan(req);
        results = run_parallel({plan.compiles.front().command}, 1, on_progress);
    }
    auto fail = [&](const ProcessResult& r) {
        std::string log = verbose ? r.output : trim_compile_log(r.output);
        std::fputs(log.c_str(), stderr);
        // A header of the user's includes XLA's, which bekc adds only for
        // sources that include it themselves.
        if (p.flags.xla_include.empty() && r.output.find("xla/ffi/api/ffi.h") != std::string::npos)
            std::fputs(
                "note: XLA's FFI headers are on the include path only when a source "
                "includes them itself or they are named: pass --xla-include DIR or set "
                "$BEKC_XLA_INCLUDE=DIR (DIR: what jax.ffi.include_dir() prints)\n",
                stderr);
        if (r.status == ProcessStatus::SpawnFailed)
            throw FatalError("bekc: error: cannot run the compiler: " + r.error, kExitToolchain);
        throw FatalError("bekc: error: compilation failed (" + r.describe() + ")",
                         kExitSourceError);
    };
    for (const auto& r : results)
        if (!r.ok() && r.status != ProcessStatus::NotRun) fail(r);
    if (plan.link) {
        if (verbose) std::fprintf(stderr, "%s\n", display_command(*plan.link).c_str());
        ProcessResult r = run_process(*plan.link);
        if (linker_refused(r)) {
            req.link_depfile.reset();
            plan.link = make_build_plan(req).link;
            plan.link_depfile.reset();
            if (verbose) std::fprintf(stderr, "%s\n", display_command(*plan.link).c_str());
            r = run_process(*plan.link);
        }
        if (!r.ok()) fail(r);
    }
    Compiled c{dir, {}};
    for (const auto& s : plan.compiles) {
        auto text = read_file(s.depfile);
        if (!text)
            throw FatalError(
                "bekc: error: the compiler wrote no dependency file " + s.depfile.string(),
                kExitToolchain);
        for (auto& d : parse_depfile(*text)) c.dependencies.compile.push_back(std::move(d));
    }
    if (plan.link_depfile) {
        auto text = read_file(link_depfile);
        if (!text)
            throw FatalError(
                "bekc: error: the linker wrote no dependency file " + link_depfile.string(),
                kExitToolchain);
        c.dependencies.link = parse_linker_depfile(*text);
        c.dependencies.link_reported = true;
    }
    return c;
}

// The first input or dependency written since the compile started, if any.
// File timestamps come from a coarse clock that can only lag, so a file
// written before the start never looks newer; sources written just before
// bekc runs (as load_cpp_inline does) are not flagged.
std::optional<std::string> changed_during_build(const DependencySet& deps,
                                                const std::vector<SourceFile>& inputs,
                                                int64_t start_ns) {
    auto recent = [&](const fs::path& path) {
        auto st = stat_file(path);
        return !st || std::max(st->mtime_ns, st->ctime_ns) >= start_ns;
    };
    for (const auto& f : inputs)
        if (recent(f.path)) return f.path.string();
    for (const auto& d : deps.direct.dependencies)
        if (recent(d.path)) return d.path.string();
    return std::nullopt;
}

// `-o DIR`: the library and the chosen manifest at a stable path. A hard link
// when the cache is on the same filesystem, else a copy; both appear by rename,
// manifest last, so a reader of DIR never sees a manifest without its library.
void place_outputs(const fs::path& dir, BuildResult& result) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw FatalError("bekc: error: -o " + dir.string() + ": " + ec.message(), kExitUsage);
    fs::path lib = dir / result.library.filename();
    fs::path tmp = dir / (".bekc." + unique_suffix());
    fs::create_hard_link(result.library, tmp, ec);
    if (ec) {
        ec.clear();
        fs::copy_file(result.library, tmp, ec);
    }
    if (ec || ::rename(tmp.c_str(), lib.c_str()) != 0) {
        fs::remove(tmp, ec);
        throw FatalError("bekc: error: cannot place " + lib.string(), kExitCache);
    }
    // rename(2) between two links to one inode succeeds and does nothing,
    // leaving the temporary link behind: remove it (a no-op otherwise).
    fs::remove(tmp, ec);
    auto manifest = read_file(result.manifest);
    if (!manifest) throw FatalError("bekc: error: " + manifest.error(), kExitCache);
    if (auto w = write_atomic(dir / "manifest.json", *manifest); !w)
        throw FatalError("bekc: error: -o: " + w.error(), kExitCache);
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
                   const std::vector<SourceFile>& inputs, const fs::path& target) {
    std::vector<std::string> prereqs;
    for (const auto& f : inputs)
        prereqs.push_back(fs::absolute(f.path).lexically_normal().string());
    if (auto text = cache.dir().read(CacheLayout::entry(entry.key) / kDependenciesFile)) {
        auto j = nlohmann::json::parse(*text, nullptr, false);
        if (j.is_array())
            for (const auto& h : j)
                if (h.is_string()) prereqs.push_back(h.get<std::string>());
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
    if (auto w = write_atomic(file, out); !w)
        throw FatalError("bekc: error: --depfile: " + w.error(), kExitCache);
}

}  // namespace

fs::path resolve_cache_root(const std::optional<std::string>& flag) {
    if (flag) return fs::absolute(*flag);
    auto dir = default_cache_dir(system_env());
    if (!dir) throw FatalError("bekc: error: " + dir.error(), kExitUsage);
    return fs::absolute(*dir);
}

BuildResult run_build(const BuildOptions& options) {
    auto start = Clock::now();
    Reporter report(options);
    Prepared p = prepare(options, report);
    p.key_inputs.files = &p.scanned.files;  // prepare() returned by value
    const BuildOptions& o = p.options;
    BuildResult result;
    for (const auto& f : p.scanned.files)
        for (const auto& fn : f.functions)
            result.targets.push_back(o.target_prefix + "." + fn.name);

    std::string direct_key = direct_key_builder(p.key_inputs).digest();
    if (o.explain_key) std::fputs(direct_key_builder(p.key_inputs).explain().c_str(), stdout);
    if (o.compile_commands && !o.dry_run)
        write_compile_commands(fs::path(*o.compile_commands),
                               {&p.scanned.files, p.nvcc, p.archs, p.flags,
                                materialize_runtime_headers(p.cache_root)});
    if (o.dry_run) {
        compile(p, "$TMPDIR/bekc-$UID/build.<direct key>", runtime_include_dir(p.cache_root), true);
        return result;
    }
    Cache cache(p.cache_root);
    // After publishing: the automatic size limit (store/cache.hpp, amortised).
    auto keep_under_limit = [&](const Entry& published) {
        auto limit = cache.size_limit(system_env());
        if (!limit) return report.warn(limit.error());
        if (auto problem = cache.enforce_limit(published, direct_key, limit->bytes))
            report.warn(*problem);
    };
    auto finish = [&](const Entry& e, bool hit) {
        result.cache_hit = hit;
        result.manifest = e.manifest(!o.no_cuda_graph);
        result.library = e.library;
        if (o.output_dir) place_outputs(fs::path(*o.output_dir), result);
        if (o.depfile)
            write_depfile(fs::path(*o.depfile), cache, e, p.scanned.files, result.manifest);
        result.seconds_total = seconds_since(start);
        return result;
    };
    auto try_hit = [&]() -> std::optional<Entry> {
        if (o.force) return std::nullopt;
        DirectLookup d = cache.lookup_direct(direct_key);
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
    if (!lock) throw FatalError("bekc: error: " + lock.error().message, kExitCache);
    if (auto e = try_hit()) return finish(*e, true);

    std::optional<RemoteCache> remote;
    if (auto config = remote_config(o.remote_cache, o.remote_read_only, system_env()))
        remote.emplace(*config, [&](const std::string& m) { report.warn(m); });
    if (remote && !o.force) {
        if (auto e = remote->fetch(cache, direct_key)) {
            result.miss_reason = "local miss, remote hit";
            result.remote_hit = true;
            keep_under_limit(*e);
            return finish(*e, true);
        }
    }

    fs::path include = materialize_runtime_headers(p.cache_root);
    // Compilers write into this user's private directory (util/fs.hpp), never
    // into the cache, which others may share. Named by the direct key, which
    // this process holds the lock of: the same inputs always compile at the
    // same paths, so a compiler launcher (ccache, sccache) in front sees the
    // same command and can serve it.
    // The cache's path is part of the name: the same inputs may be built for
    // two caches at once.
    auto private_dir = private_temp_dir(
        "build." + sha256_hex(p.cache_root.string() + "\n" + direct_key).substr(0, 32));
    if (!private_dir) throw FatalError("bekc: error: " + private_dir.error(), kExitCache);
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
    Compiled c = compile(p, dir, include, false);
    result.seconds_compile = seconds_since(compile_start);
    DependencySet deps = classify_dependencies(c.dependencies, p.key_inputs, include, dir);
    KeyBuilder full = full_key_builder(direct_key, deps);
    if (o.explain_key) std::fputs(full.explain().c_str(), stdout);
    std::string key = full.digest();
    deps.direct.key = key;
    // A file saved while the compiler ran may be newer than what was compiled,
    // and its new bytes are in the key: this result is used, never cached.
    std::optional<std::string> changed =
        changed_during_build(deps, p.scanned.files, compile_start_ns);
    if (changed) {
        report.warn(*changed + " changed during the build; the result is used but not cached");
        key = KeyBuilder("uncached").add("build_key", key).add("nonce", unique_suffix()).digest();
    }

    fs::path built = dir / p.library_file;
    auto outcome = cache.get_or_build(
        key,
        [&](const Staging& staging) -> std::expected<void, std::string> {
            auto sha = sha256_file(built);
            if (!sha) return std::unexpected(sha.error());
            if (auto moved = staging.move_in(p.library_file, built); !moved) return moved;
            ManifestInput m{
                o.name,  o.target_prefix,           key,   p.library_file,           *sha,
                p.nvcc,  p.key_inputs.nvcc_version, p.cxx, p.key_inputs.cxx_version, p.archs,
                p.flags, &p.scanned.files};
            if (auto w = staging.write(kManifestNoGraphFile, render_manifest(m, false)); !w)
                return w;
            nlohmann::json headers = deps.user_headers;
            if (auto w = staging.write(kDependenciesFile, headers.dump()); !w) return w;
            return staging.write(kManifestFile, render_manifest(m, true));
        },
        o.force);
    if (!outcome) throw FatalError("bekc: error: " + outcome.error().message, kExitCache);
    // --force rebuilt an entry that existed under the same key: the same
    // inputs must give the same library, or the key missed one of them.
    if (outcome->replaced_sha256) {
        auto now = sha256_file(outcome->entry.library);
        if (now && *now != *outcome->replaced_sha256)
            report.warn("--force rebuilt cache entry " + key +
                        " and the library differs from the one it replaced (SHA-256 " +
                        outcome->replaced_sha256->substr(0, 16) + "... before, " +
                        now->substr(0, 16) +
                        "... now) although the key is unchanged: an input bekc does not "
                        "key changed, or the compiler is not deterministic; please report it");
    }
    if (!outcome->repaired.empty())
        report.warn("replaced a corrupt cache entry: " + outcome->repaired);
    if (changed) return finish(outcome->entry, false);
    if (auto r = cache.record_direct(direct_key, deps.direct); !r)
        report.warn("could not record dependencies for fast hits: " + r.error());
    if (!outcome->hit) keep_under_limit(outcome->entry);
    if (remote) remote->publish(cache, outcome->entry, direct_key, deps.direct);
    return finish(outcome->entry, false);
}

}  // namespace bekc
