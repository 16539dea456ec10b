#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.hpp"
#include "driver/build.hpp"
#include "driver/build_report.hpp"
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
        package.cache_dir = resolve_cache_root(o.cache_dir, env).string();
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
        if (!o.dry_run) {
            account_failure(o, env);
            warn_log_problem(
                o, log_build(o, nullptr, nullptr, e.exit_code(),
                             std::chrono::duration<double>(Clock::now() - start).count(), env));
        }
        if (auto note = cache_way_out(e, o, env)) throw FatalError(*note, e.exit_code());
        throw;
    }
    if (o.dry_run) return r.exit_code;
    nlohmann::ordered_json why = account_build(o, r, env);
    warn_log_problem(o, log_build(o, &r, why, r.exit_code, r.seconds_total, env));
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
    cmd->add_option("inputs", o->inputs, "Kernel sources (.cu, .cpp, .cc, .cxx) or directories")
        ->required();
    const std::string max_length = std::to_string(kMaxModuleNameLength);
    cmd->add_option("--name", o->name,
                    "Module name, an ASCII C++ identifier of at most " + max_length +
                        " characters; the library is lib<name>.so (default: the first input's "
                        "stem)");
    cmd->add_option("--target-prefix", o->target_prefix,
                    "Prefix of the FFI target names, '<prefix>.<function>': letters, digits, '_' "
                    "and '.', at most " +
                        max_length + " characters (default: --name)");
    cmd->add_option("-O", o->flags.opt_level, "Optimisation level, -O0 to -O3 (default -O3)")
        ->check(CLI::Range(0, 3));
    cmd->add_flag("--fast-math", o->flags.fast_math,
                  "--use_fast_math for nvcc, -ffast-math for C++");
    cmd->add_option("--arch", o->arch,
                    "GPU architectures: a list (sm_90,80,9.0,sm_90a), 'native', or 'auto' (the "
                    "GPUs present; none found: sm_80 plus PTX, with a warning). Default: auto")
        ->capture_default_str();
    cmd->add_option("--std", o->flags.cxx_std, "C++ standard for nvcc and the host compiler")
        ->capture_default_str();
    cmd->add_option("-I", o->flags.include_dirs, "Add an include directory")
        ->allow_extra_args(false);
    cmd->add_option("-D", o->flags.defines, "Define a macro, NAME or NAME=VALUE")
        ->allow_extra_args(false);
    cmd->add_option("--cuda-flag", o->flags.cuda_flags,
                    "Extra nvcc flag (write --cuda-flag=-lineinfo)")
        ->allow_extra_args(false);
    cmd->add_option("--cxx-flag", o->flags.cxx_flags, "Extra host-compiler flag for .cpp inputs")
        ->allow_extra_args(false);
    cmd->add_option("--ldflag", o->flags.ldflags, "Extra linker flag (write --ldflag=-lcublas)")
        ->allow_extra_args(false);
    cmd->add_option("--linker-arg", o->flags.linker_args,
                    "One argument for the linker, passed as -Xlinker ARG (write "
                    "--linker-arg=-rpath=/opt/lib); nvcc splits on commas, so CUDA builds refuse "
                    "an ARG with one")
        ->allow_extra_args(false);
    cmd->add_option("--xla-include", o->xla_include,
                    "Where XLA's FFI headers are, for sources that include xla/ffi/api/ffi.h "
                    "(default: $BEKC_XLA_INCLUDE, else the jaxlib of the active virtualenv or of "
                    "python3 on PATH)");
    cmd->add_option("--function", o->functions,
                    "Export NAME with this spec instead of the annotations: 'NAME=arg,ret,...'")
        ->allow_extra_args(false);
    cmd->add_option("--functions", o->functions_json,
                    "JSON file {\"NAME\": [\"arg\", \"ret\", ...]} naming the exports");
    cmd->add_flag("--no-cuda-graph", o->no_cuda_graph,
                  "Do not report the command-buffer trait (not part of the cache key)");
    cmd->add_flag("--force", o->force, "Rebuild even when the cache has the result");
    cmd->add_flag("--allow-default-stream", o->allow_default_stream,
                  "No warning for a .cu function exported without a stream parameter");
    cmd->add_option("-o,--output-dir", o->output_dir, "Also place the library and manifest in DIR");
    cmd->add_option("--depfile", o->depfile,
                    "Write a Make rule listing every input and user header");
    cmd->add_option("--compile-commands", o->compile_commands,
                    "Write (merge) compile_commands.json entries for the sources, with the "
                    "include paths bekc adds, for clangd");
    add_setting_options(cmd, o->cache_dir, o->remote_cache, o->remote_read_only, o->launcher);
    cmd->add_option("--nvcc", o->nvcc,
                    "nvcc to use (default: $BEKC_NVCC, $CUDA_HOME, $CUDA_PATH, a pip toolkit, "
                    "PATH, /usr/local/cuda)");
    cmd->add_option("--nvcc-prefer", o->nvcc_prefer,
                    "pip: a toolkit installed from pip before nvcc on PATH (default); system: "
                    "PATH first (default: $BEKC_NVCC_PREFER)");
    cmd->add_option("--python-site", o->python_sites,
                    "Look for a pip CUDA toolkit in this site-packages only (repeatable; bekc's "
                    "Python loaders pass their interpreter's)");
    cmd->add_option("--brainevent-nvcc", o->brainevent_nvcc,
                    "brainevent's BRAINEVENT_NVCC_PATH: nvcc before $CUDA_HOME (bekc's loaders "
                    "pass it while routing brainevent)");
    cmd->add_option("--cxx", o->cxx, "Host C++ compiler (default: $CXX, c++, g++, clang++)");
    cmd->add_option("-j,--jobs", o->jobs, "Parallel compiles (default: one per core)");
    cmd->add_flag("--json", o->json, "Print one JSON object instead of the manifest path");
    cmd->add_flag("--dry-run", o->dry_run, "Print the commands a build would run, run nothing");
    cmd->add_flag("--explain-key", o->explain_key, "Print the records the cache keys hash");
    cmd->add_flag("-v,--verbose", o->verbose, "Print every command and full compiler output");
    cmd->add_flag("-q,--quiet", o->quiet, "Print no warnings");
    return [o] { return build(*o); };
}

}  // namespace bekc::cli
