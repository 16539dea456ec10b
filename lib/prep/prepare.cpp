#include "prep/prepare.hpp"

#include <unistd.h>

#include <cctype>

#include "codegen/render.hpp"
#include "plan/arch.hpp"
#include "prep/build_warnings.hpp"
#include "prep/cudart_choice.hpp"
#include "prep/cxx_standard_check.hpp"
#include "scan/symbols.hpp"
#include "store/cache_layers.hpp"
#include "store/layout.hpp"
#include "toolchain/flag_files.hpp"
#include "toolchain/gpu_detect.hpp"
#include "toolchain/link_search.hpp"
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

// An explicit --arch list, checked before any tool is looked for; empty for
// `auto` and `native`.
std::expected<std::vector<Arch>, Error> explicit_archs(const BuildOptions& o) {
    if (o.arch == "auto" || o.arch == "native") return std::vector<Arch>{};
    return parse_arch_list(o.arch);
}

// What `--arch auto` falling back to the default architecture says, in the
// terms of whoever called: a Python loader (it names its site-packages)
// chooses with its compute_capability parameter, the CLI with --arch.
std::string arch_fallback_warning(const BuildOptions& o, const std::string& how) {
    const std::string what = "compiling for sm_" + std::to_string(kDefaultArch) +
                             " plus PTX, which newer GPUs compile at load time";
    if (!o.python_sites.empty())
        return "no GPU found (" + how + "); " + what +
               ". Pass compute_capability= to the loader to choose (e.g. "
               "compute_capability=\"9.0\"), or set $BRAINEVENT_COMPUTE_CAPABILITIES.";
    return "--arch auto found no GPU (" + how + "); " + what +
           ". Pass --arch to choose (e.g. --arch sm_90).";
}

// `auto` and `native`: the GPUs present. With none, `auto` leaves the choice
// to an architecture the CUDA flags name, else falls back to the default,
// with a warning for when the build compiles.
std::expected<void, Error> detect_archs(BuildInputs& in, const BuildOptions& o,
                                        const Reporter& report, BuildContext& ctx) {
    GpuDetection d = detect_gpus(in.cache_root, ctx.runner, ctx.tools);
    if (!d.archs.empty()) {
        report.info("--arch " + o.arch + ": " + arch_list_string(d.archs) + " (" + d.how + ")");
        in.archs = std::move(d.archs);
        return {};
    }
    if (o.arch == "native")
        return fail(ErrorKind::Usage,
                    "--arch native found no GPU (" + d.how +
                        "); name the architectures instead, e.g. --arch sm_80,sm_90");
    if (flags_name_gpu_archs(nvcc_env_flags(in.env).around(in.flags.cuda_flags))) {
        report.info("--arch auto found no GPU (" + d.how +
                    "); compiling for the architectures the CUDA flags name");
        return {};
    }
    in.arch_fallback = arch_fallback_warning(o, d.how);
    in.archs = {Arch{kDefaultArch, ""}};
    return {};
}

// nvcc reads a -Xlinker value as a list split at commas and white space, and
// hands the link to the host compiler through a shell: an argument holding one
// of these characters cannot reach the linker whole from a CUDA build. Empty
// ones are always mistakes.
std::expected<void, Error> check_linker_args(const std::vector<std::string>& args,
                                             bool nvcc_links) {
    constexpr std::string_view kNvccSplits = ", \t\n\r\f\v'\"\\;$`&|<>()*?[]{}!";
    for (const auto& a : args) {
        if (a.empty()) return fail(ErrorKind::Usage, "--linker-arg is empty");
        size_t bad = nvcc_links ? a.find_first_of(kNvccSplits) : std::string::npos;
        if (bad == std::string::npos) continue;
        std::string shown = std::isspace(static_cast<unsigned char>(a[bad])) ? "white space"
                            : a[bad] == ','                                  ? "a comma"
                                            : std::string("'") + a[bad] + "'";
        return fail(ErrorKind::Usage,
                    "--linker-arg '" + a + "' has " + shown +
                        ", which nvcc splits or hands to a shell, so a CUDA build cannot "
                        "pass it to the linker whole; split it into several --linker-arg "
                        "values or use a path without it");
    }
    return {};
}

// The first value of `values` (given as `option`) that nvcc's shell would
// run or expand: in double quotes, or unquoted as a -Xcompiler value.
std::expected<void, Error> check_shell_values(std::string_view option,
                                              const std::vector<std::string>& values) {
    // In double quotes: what expands, and what ends the quotes.
    constexpr std::string_view kQuoted = "$`\"\\\n\r";
    constexpr std::string_view kUnquoted = "$`\"\\\n\r;&|<>()";
    auto is_compiler_option = [](std::string_view flag) {
        return flag == "-Xcompiler" || flag == "--compiler-options";
    };
    for (size_t i = 0; i < values.size(); ++i) {
        const std::string& v = values[i];
        bool unquoted = (i > 0 && is_compiler_option(values[i - 1])) ||
                        v.starts_with("-Xcompiler=") || v.starts_with("--compiler-options=");
        size_t bad = v.find_first_of(unquoted ? kUnquoted : kQuoted);
        if (bad == std::string::npos) continue;
        std::string shown =
            v[bad] == '\n' || v[bad] == '\r' ? "a line break" : std::string("'") + v[bad] + "'";
        return fail(ErrorKind::Usage,
                    std::string(option) + " '" + v + "' has " + shown +
                        ", which nvcc hands to a shell that would run or expand it; a "
                        "CUDA build cannot pass it (use a path without it, or a link "
                        "to it)");
    }
    return {};
}

// nvcc hands the host compiler's and the linker's command lines to a shell:
// -D values and paths inside double quotes, where $ and ` still expand, and
// -Xcompiler values unquoted. What a CUDA build passes to nvcc must not make
// that shell run or expand anything: a checkout named `$(...)` in
// `-D DATADIR=<checkout>/data` would run it, and `$ORIGIN` would vanish.
std::expected<void, Error> check_nvcc_shell_args(const CompileFlags& f) {
    if (auto ok = check_shell_values("-D", f.defines); !ok) return ok;
    if (auto ok = check_shell_values("--cuda-flag", f.cuda_flags); !ok) return ok;
    return check_shell_values("--ldflag", f.ldflags);
}

// The first source that includes XLA's FFI headers (or brainevent's dtypes.h
// / ffi_compat.h) directly, and that #include; null when none does.
std::pair<const SourceFile*, std::optional<IncludeDirective>> xla_includer(
    const ScannedInputs& scanned) {
    for (const auto& f : scanned.files)
        for (auto& inc : find_includes(f.text, f.path.string()))
            if (needs_xla_headers(inc)) return {&f, std::move(inc)};
    return {nullptr, std::nullopt};
}

// XLA's FFI headers go on the include path when the user named them, or when a
// source includes them (or brainevent's dtypes.h / ffi_compat.h) directly; a
// source that needs them when none can be found is an error at its #include.
std::expected<std::string, Error> resolve_xla_include(const BuildOptions& o,
                                                      const ScannedInputs& scanned,
                                                      const EnvLookup& env,
                                                      const Reporter& report) {
    auto [needing, include] = xla_includer(scanned);
    // Looking for a jaxlib reads directories: only when a source needs one or
    // the user named the headers, not on every build (a cache hit included).
    if (!needing && !o.xla_include && !env("BEKC_XLA_INCLUDE")) return std::string();
    auto found = find_xla_headers(o.xla_include, env);
    if (!found) return std::unexpected(found.error());
    if (needing && !*found) {
        report.print(missing_xla_headers_message(*include, needing->text));
        return fail(ErrorKind::Source, "");
    }
    return *found && (needing || (*found)->explicit_choice) ? (*found)->dir.string()
                                                            : std::string();
}

// The host compiler, and nvcc for CUDA inputs. One not found is kept in
// in.toolchain_missing: a hit needs neither (portable/portable.hpp).
void find_toolchain(BuildInputs& in, const BuildOptions& o, bool any_cuda, BuildContext& ctx) {
    auto cxx = find_cxx(o.cxx, ctx.tools);
    if (!cxx) {
        in.toolchain_missing = cxx.error();
        return;
    }
    in.cxx = std::move(*cxx);
    if (!any_cuda) return;
    auto nvcc =
        find_nvcc(NvccRequest{o.nvcc, o.brainevent_nvcc, o.nvcc_prefer, o.python_sites}, ctx.tools);
    if (!nvcc) {
        in.toolchain_missing = nvcc.error();
        return;
    }
    in.nvcc = nvcc->tool;
    in.nvcc_how = nvcc->how;
    in.nvcc_wheels = pip_toolkit_wheels(nvcc->tool);
}

// The own cache and the read-only ones; a warning for each skipped, and with
// -v a note when cache_dir is read-only here.
std::expected<void, Error> take_cache_layers(BuildInputs& in, const BuildOptions& o,
                                             const BuildContext& ctx, const Reporter& report) {
    auto layers =
        resolve_cache_layers(o.cache_dir, o.read_only_caches, ctx.env, ctx.cwd, o.python_sites);
    if (!layers) return std::unexpected(layers.error());
    for (const auto& skipped : layers->skipped) report.warn(skipped.message());
    if (layers->demoted)
        report.info("the cache " + layers->demoted->string() +
                    " is read-only here: serving hits from it, building misses into " +
                    layers->own.string());
    in.cache_root = std::move(layers->own);
    in.read_only_caches = std::move(layers->read_only);
    return {};
}

// The module's name and its targets' prefix, defaulted and checked.
std::expected<void, Error> name_module(BuildInputs& in, const BuildOptions& o,
                                       const std::vector<fs::path>& paths) {
    in.name = o.name.empty() ? paths.front().stem().string() : o.name;
    if (auto ok = check_name_lengths(in.name, o.name.empty() ? "the first input's stem" : "--name",
                                     o.target_prefix);
        !ok)
        return ok;
    if (std::string problem = module_name_problem(in.name); !problem.empty())
        return fail(ErrorKind::Usage,
                    "module name " + quoted_name(in.name) +
                        (o.name.empty() ? " (the first input's file name) " : " ") + problem +
                        "; choose another with --name");
    in.target_prefix = o.target_prefix.empty() ? in.name : o.target_prefix;
    if (std::string problem = target_prefix_problem(in.target_prefix); !problem.empty())
        return fail(ErrorKind::Usage,
                    "--target-prefix " + quoted_name(in.target_prefix) + " " + problem);
    return {};
}

// The inputs read and scanned; their diagnostics printed, and an error when
// one is an error.
std::expected<ScannedInputs, Error> read_inputs(const BuildOptions& o,
                                                const std::vector<fs::path>& paths,
                                                const Reporter& report) {
    auto specs = collect_explicit_specs(o.functions, o.functions_json);
    if (!specs) return std::unexpected(specs.error());
    auto scanned = scan_inputs(paths, *specs);
    if (!scanned) return scanned;
    if (has_errors(scanned->diagnostics)) {
        report.print(render_all(scanned->diagnostics));
        return fail(ErrorKind::Source, "");
    }
    return scanned;
}

// The compile flags as this build reads them: include directories made
// absolute, with their warnings, and the environment the compilers read.
void take_flags(BuildInputs& in, const BuildOptions& o, const ScannedInputs& scanned, bool any_cuda,
                BuildContext& ctx, const Reporter& report) {
    static_cast<CompileFlags&>(in.flags) = o.flags;
    for (auto& d : in.flags.include_dirs) d = (ctx.cwd / d).string();
    for (const auto& w : missing_include_dir_warnings(o.flags.include_dirs, in.flags.include_dirs))
        report.warn(w);
    if (o.verbose)
        for (const auto& line : brainevent_header_notes(in.flags.include_dirs)) report.info(line);
    if (!o.allow_default_stream && !o.quiet)
        report.print(render_all(default_stream_warnings(scanned.files)));
    in.env = read_compiler_env(ctx.raw_env, any_cuda, ctx.cwd);
}

// What the flags ask of nvcc, the linker and the C++ standard, checked, and
// the files they make the tools read.
std::expected<void, Error> check_flags(BuildInputs& in, bool any_cuda, const BuildContext& ctx) {
    const NvccEnvFlags nvcc_env = nvcc_env_flags(in.env);
    if (auto ok = take_cudart_option(in.flags, any_cuda, nvcc_env); !ok) return ok;
    if (auto ok = check_nvcc_env_phases(nvcc_env); !ok) return ok;
    if (auto ok = check_linker_args(in.flags.linker_args, any_cuda); !ok) return ok;
    if (any_cuda)
        if (auto ok = check_nvcc_shell_args(in.flags); !ok) return ok;
    auto flag_files = read_flag_files(in.flags, nvcc_env, ctx.cwd);
    if (!flag_files) return std::unexpected(flag_files.error());
    in.flag_files = std::move(*flag_files);
    return check_cxx_standards(in.flags, nvcc_env, [&](std::string_view name) {
        return response_file_words_of(in.flag_files, name, ctx.cwd);
    });
}

// The tools' versions (asked once per binary), the base directory, and the
// CUDA runtime a CUDA build links.
std::expected<void, Error> ask_tools(BuildInputs& in, BuildContext& ctx, const Reporter& report) {
    ToolFacts facts(in.cache_root, ctx.runner, in.read_only_caches);
    if (in.nvcc) in.nvcc_version = facts.version(*in.nvcc);
    if (!in.toolchain_missing) in.cxx_version = facts.version(in.cxx);
    if (auto base = ctx.env("BEKC_BASE_DIR"); base && !base->empty())
        in.base = BaseDir(ctx.cwd / *base);
    if (!in.nvcc) return {};
    // The host compiler's multiarch triplet is asked on a miss only (the
    // execute phase): its system library directories are not looked in here.
    in.link_reads_opaque_code = link_reads_opaque_code(in.flags, in.env, in.nvcc, "");
    return resolve_cudart(in, report);
}

}  // namespace

std::expected<BuildInputs, Error> prepare(const BuildOptions& o, BuildContext& ctx,
                                          const Reporter& report) {
    BuildInputs in;
    if (o.flags.opt_level < 0 || o.flags.opt_level > 3)
        return fail(ErrorKind::Usage,
                    "-O" + std::to_string(o.flags.opt_level) + ": use -O0 to -O3");
    auto paths = expand_inputs(o.inputs);
    if (!paths) return std::unexpected(paths.error());
    if (auto ok = name_module(in, o, *paths); !ok) return std::unexpected(ok.error());
    auto scanned = read_inputs(o, *paths, report);
    if (!scanned) return std::unexpected(scanned.error());
    bool any_cuda = false;
    for (const auto& f : scanned->files) any_cuda |= f.cuda;
    if (any_cuda) {
        auto archs = explicit_archs(o);
        if (!archs) return std::unexpected(archs.error());
        in.archs = std::move(*archs);
    }
    if (auto ok = take_cache_layers(in, o, ctx, report); !ok) return std::unexpected(ok.error());
    in.private_places = private_dir_places(in.cache_root, ctx);
    find_toolchain(in, o, any_cuda, ctx);
    take_flags(in, o, *scanned, any_cuda, ctx, report);
    if (any_cuda && in.nvcc && in.archs.empty())
        if (auto ok = detect_archs(in, o, report, ctx); !ok) return std::unexpected(ok.error());
    if (auto ok = check_flags(in, any_cuda, ctx); !ok) return std::unexpected(ok.error());
    auto xla = resolve_xla_include(o, *scanned, ctx.env, report);
    if (!xla) return std::unexpected(xla.error());
    in.flags.xla_include = std::move(*xla);
    auto launcher = find_launcher(o.launcher, ctx.tools);
    if (!launcher) return std::unexpected(launcher.error());
    in.launcher = std::move(*launcher);
    if (auto ok = ask_tools(in, ctx, report); !ok) return std::unexpected(ok.error());
    in.files = std::move(scanned->files);
    return in;
}

}  // namespace bekc
