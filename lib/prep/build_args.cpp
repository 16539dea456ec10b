#include "prep/build_args.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <optional>

#include "config/setting_options.hpp"
#include "prep/inputs.hpp"

namespace bekc {

namespace {

// The compile flags of `bekc build` (plan/flags.hpp), each for both compilers
// or the one it names.
void add_compile_flag_options(CLI::App& cmd, CompileFlags& f) {
    cmd.add_option("-O", f.opt_level, "Optimisation level, -O0 to -O3 (default -O3)")
        ->check(CLI::Range(0, 3));
    cmd.add_flag("--fast-math", f.fast_math, "--use_fast_math for nvcc, -ffast-math for C++");
    cmd.add_option("--std", f.cxx_std, "C++ standard for nvcc and the host compiler")
        ->capture_default_str();
    cmd.add_option("-I", f.include_dirs, "Add an include directory")->allow_extra_args(false);
    cmd.add_option("-D", f.defines, "Define a macro, NAME or NAME=VALUE")->allow_extra_args(false);
    cmd.add_option("--cuda-flag", f.cuda_flags, "Extra nvcc flag (write --cuda-flag=-lineinfo)")
        ->allow_extra_args(false);
    cmd.add_option("--cxx-flag", f.cxx_flags, "Extra host-compiler flag for .cpp inputs")
        ->allow_extra_args(false);
    cmd.add_option("--ldflag", f.ldflags, "Extra linker flag (write --ldflag=-lcublas)")
        ->allow_extra_args(false);
    cmd.add_option("--cudart", f.cudart,
                   "CUDA runtime: shared (the toolkit's libcudart.so, the one a JAX process has "
                   "loaded; default where the toolkit has it) or static (nvcc's default)");
    cmd.add_option("--linker-arg", f.linker_args,
                   "One argument for the linker, passed as -Xlinker ARG (write "
                   "--linker-arg=-rpath=/opt/lib); nvcc splits on commas, so CUDA builds refuse "
                   "an ARG with one")
        ->allow_extra_args(false);
}

}  // namespace

void add_build_options(CLI::App& cmd, BuildOptions& o) {
    cmd.add_option("inputs", o.inputs, "Kernel sources (.cu, .cpp, .cc, .cxx) or directories")
        ->required();
    const std::string max_length = std::to_string(kMaxModuleNameLength);
    cmd.add_option("--name", o.name,
                   "Module name, any name brainevent takes (e.g. my-kernels): at most " +
                       max_length +
                       " characters, no '/', no control character, not '.' or '..'; the "
                       "library is lib<name>.so with bytes other than ASCII letters, digits and "
                       "'_.+-' written as '_' (default: the first input's stem)");
    cmd.add_option("--target-prefix", o.target_prefix,
                   "Prefix of the FFI target names, '<prefix>.<function>': any text without a "
                   "control character, at most " +
                       max_length + " characters (default: --name)");
    cmd.add_option("--arch", o.arch,
                   "GPU architectures: a list (sm_90,80,9.0,sm_90a), 'native', or 'auto' (the "
                   "GPUs present; none found: sm_80 plus PTX, with a warning, unless an -arch or "
                   "-gencode in --cuda-flag chooses). Default: auto")
        ->capture_default_str();
    add_compile_flag_options(cmd, o.flags);
    cmd.add_option("--xla-include", o.xla_include,
                   "Where XLA's FFI headers are, for sources that include xla/ffi/api/ffi.h "
                   "(default: $BEKC_XLA_INCLUDE, else the jaxlib of the active virtualenv or of "
                   "python3 on PATH)");
    cmd.add_option("--function", o.functions,
                   "Export NAME with this spec instead of the annotations: 'NAME=arg,ret,...'")
        ->allow_extra_args(false);
    cmd.add_option("--functions", o.functions_json,
                   "JSON file {\"NAME\": [\"arg\", \"ret\", ...]} naming the exports");
    cmd.add_flag("--no-cuda-graph", o.no_cuda_graph,
                 "Do not report the command-buffer trait (not part of the cache key)");
    cmd.add_flag("--force", o.force, "Rebuild even when the cache has the result");
    cmd.add_flag("--allow-default-stream", o.allow_default_stream,
                 "No warning for a .cu function exported without a stream parameter");
    cmd.add_option("-o,--output-dir", o.output_dir, "Also place the library and manifest in DIR");
    cmd.add_option("--depfile", o.depfile, "Write a Make rule listing every input and user header");
    cmd.add_option("--compile-commands", o.compile_commands,
                   "Write (merge) compile_commands.json entries for the sources, with the "
                   "include paths bekc adds, for clangd");
    cmd.add_option("--trace", o.trace,
                   "Write where the build's time went to FILE, as a Chrome trace (open it in "
                   "ui.perfetto.dev or chrome://tracing): each step with its start, end, lane "
                   "and cache outcome; for a package, a process per module");
    add_setting_options(&cmd, o.cache_dir, o.read_only_caches, o.remote_cache, o.remote_read_only,
                        o.launcher);
    cmd.add_option("--nvcc", o.nvcc,
                   "nvcc to use (default: $BEKC_NVCC, $CUDA_HOME, $CUDA_PATH, a pip toolkit, "
                   "PATH, /usr/local/cuda)");
    cmd.add_option("--nvcc-prefer", o.nvcc_prefer,
                   "pip: a toolkit installed from pip before nvcc on PATH (default); system: "
                   "PATH first (default: $BEKC_NVCC_PREFER)");
    cmd.add_option("--python-site", o.python_sites,
                   "Look for a pip CUDA toolkit in this site-packages only, and use the packs "
                   "installed there (bekc_packs/) as read-only caches (repeatable; bekc's Python "
                   "loaders pass their interpreter's)")
        ->allow_extra_args(false);
    cmd.add_option("--brainevent-nvcc", o.brainevent_nvcc,
                   "brainevent's BRAINEVENT_NVCC_PATH: nvcc before $CUDA_HOME (bekc's loaders "
                   "pass it while routing brainevent)");
    cmd.add_option("--cxx", o.cxx, "Host C++ compiler (default: $CXX, c++, g++, clang++)");
    cmd.add_option("-j,--jobs", o.jobs, "Parallel compiles (default: one per core)");
    cmd.add_option("--package-defects", o.package_defects,
                   "bekc build <package>: a file the package cannot build either (a header it "
                   "does not ship) is a warning (warn, the default) or fails the build (error)")
        ->check(CLI::IsMember({"warn", "error"}));
    cmd.add_flag("--json", o.json, "Print one JSON object instead of the manifest path");
    cmd.add_flag("--dry-run", o.dry_run, "Print the commands a build would run, run nothing");
    cmd.add_flag("--explain-key", o.explain_key, "Print the records the cache keys hash");
    cmd.add_flag("-v,--verbose", o.verbose, "Print every command and full compiler output");
    cmd.add_flag("-q,--quiet", o.quiet, "Print no warnings");
}

namespace {

class ArgvWriter {
  public:
    // `--option=VALUE`; an empty VALUE as a separate argument (`--option=`
    // would take the next argument as its value).
    void value(const std::string& option, const std::string& v) {
        if (v.empty()) {
            out_.push_back(option);
            out_.emplace_back();
        } else {
            out_.push_back(option + "=" + v);
        }
    }
    void value(const std::string& option, const std::optional<std::string>& v) {
        if (v) value(option, *v);
    }
    void values(const std::string& option, const std::vector<std::string>& vs) {
        for (const auto& v : vs) value(option, v);
    }
    // A short option with its value attached: `-IDIR`, `-DNAME=VALUE`.
    void attached(const std::string& option, const std::vector<std::string>& vs) {
        for (const auto& v : vs) out_.push_back(option + v);
    }
    void flag(const std::string& option, bool on) {
        if (on) out_.push_back(option);
    }
    void raw(const std::string& arg) { out_.push_back(arg); }
    std::vector<std::string> take() { return std::move(out_); }

  private:
    std::vector<std::string> out_;
};

}  // namespace

std::expected<BuildOptions, std::string> parse_build_args(const std::vector<std::string>& args) {
    CLI::App cmd;
    BuildOptions o;
    add_build_options(cmd, o);
    std::vector<const char*> pointers{"build"};
    for (const auto& a : args) pointers.push_back(a.c_str());
    try {
        cmd.parse(static_cast<int>(pointers.size()), pointers.data());
    } catch (const CLI::Error& e) {
        return std::unexpected(std::string(e.what()));
    }
    return o;
}

std::vector<std::string> to_argv(const BuildOptions& o) {
    const BuildOptions defaults;
    const bool dashed = std::any_of(o.inputs.begin(), o.inputs.end(),
                                    [](const std::string& in) { return in.rfind('-', 0) == 0; });
    ArgvWriter w;
    if (!dashed)
        for (const auto& in : o.inputs) w.raw(in);
    if (!o.name.empty()) w.value("--name", o.name);
    if (!o.target_prefix.empty()) w.value("--target-prefix", o.target_prefix);
    const CompileFlags& f = o.flags;
    if (f.opt_level != defaults.flags.opt_level) w.raw("-O" + std::to_string(f.opt_level));
    w.flag("--fast-math", f.fast_math);
    if (o.arch != defaults.arch) w.value("--arch", o.arch);
    if (f.cxx_std != defaults.flags.cxx_std) w.value("--std", f.cxx_std);
    w.attached("-I", f.include_dirs);
    w.attached("-D", f.defines);
    w.values("--cuda-flag", f.cuda_flags);
    w.values("--cxx-flag", f.cxx_flags);
    w.values("--ldflag", f.ldflags);
    w.values("--linker-arg", f.linker_args);
    if (!f.cudart.empty()) w.value("--cudart", f.cudart);
    w.value("--xla-include", o.xla_include);
    w.values("--function", o.functions);
    if (!o.functions_json.empty()) w.value("--functions", o.functions_json);
    w.flag("--no-cuda-graph", o.no_cuda_graph);
    w.flag("--force", o.force);
    w.flag("--allow-default-stream", o.allow_default_stream);
    w.value("--output-dir", o.output_dir);
    w.value("--depfile", o.depfile);
    w.value("--compile-commands", o.compile_commands);
    w.value("--trace", o.trace);
    w.value("--cache-dir", o.cache_dir);
    w.value("--read-only-caches", o.read_only_caches);
    w.value("--remote-cache", o.remote_cache);
    w.flag("--remote-cache-read-only", o.remote_read_only);
    w.value("--launcher", o.launcher);
    w.value("--nvcc", o.nvcc);
    w.value("--nvcc-prefer", o.nvcc_prefer);
    w.values("--python-site", o.python_sites);
    w.value("--brainevent-nvcc", o.brainevent_nvcc);
    w.value("--cxx", o.cxx);
    if (o.jobs != defaults.jobs) w.raw("-j" + std::to_string(o.jobs));
    if (o.package_defects != defaults.package_defects)
        w.value("--package-defects", o.package_defects);
    w.flag("--json", o.json);
    w.flag("--dry-run", o.dry_run);
    w.flag("--explain-key", o.explain_key);
    w.flag("-v", o.verbose);
    w.flag("-q", o.quiet);
    if (dashed) {
        w.raw("--");
        for (const auto& in : o.inputs) w.raw(in);
    }
    return w.take();
}

BuildOptions library_options(const BuildOptions& o) {
    BuildOptions kept;
    kept.inputs = o.inputs;
    kept.name = o.name;
    kept.target_prefix = o.target_prefix;
    kept.flags = o.flags;
    kept.arch = o.arch;
    kept.functions = o.functions;
    kept.functions_json = o.functions_json;
    return kept;
}

}  // namespace bekc
