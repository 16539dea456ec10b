#include "graph/keys.hpp"

#include "graph/recipe.hpp"
#include "graph/search_order.hpp"
#include "prep/build_args.hpp"
#include "store/hash.hpp"
#include "store/layout.hpp"
#include "toolchain/compiler_env.hpp"
#include "util/embedded.hpp"
#include "util/env.hpp"
#include "util/version.hpp"

namespace bekc {

namespace {

// Options whose value names a file or directory the compilers read, or the
// base itself mapped out of what they write: relative to the base in the
// key, as ccache's base_dir rewrites only include and source paths. Every
// other argument keeps the checkout's path, since the compiler or the linker
// may copy it into the library (-D DATADIR=<checkout>/data,
// -Wl,-rpath,<checkout>/lib): two checkouts must not share that library.
constexpr std::string_view kPathValueOptions[] = {
    "-I", "-isystem", "-iquote", "-idirafter", "-L", "-include", "-MF", "-o", "-c"};
constexpr std::string_view kAttachedPathOptions[] = {
    "-I", "-isystem", "-iquote", "-idirafter", "-L", "-ffile-prefix-map="};

bool reads_path(std::string_view previous, std::string_view arg) {
    for (auto o : kPathValueOptions)
        if (previous == o) return true;
    for (auto o : kAttachedPathOptions)
        if (arg.size() > o.size() && arg.starts_with(o)) return true;
    // A bare path: a source, an object, a tool (not a value of -Xlinker or
    // -Xcompiler, which the linker may copy as it is).
    return arg.starts_with('/') && previous != "-Xlinker" && previous != "-Xcompiler";
}

std::string hide_argument(const BaseDir& b, std::string_view previous, std::string_view arg) {
    return reads_path(previous, arg) ? b.hide(arg) : std::string(arg);
}

// The compilers' variables whose value is a search path (CPATH, LIBRARY_PATH):
// relative to the base; the others (LD_RUN_PATH, NVCC_APPEND_FLAGS) as set.
bool is_search_path(std::string_view name) {
    for (const auto& v : kCompilerEnv)
        if (v.name == name) return v.role != EnvRole::Value;
    return false;
}

}  // namespace

KeyBuilder direct_key_builder(const BuildInputs& in, const BuildGraph& graph) {
    KeyBuilder k("direct");
    // Paths under the base directory count relative to it.
    const BaseDir& b = in.base;
    k.add("bekc_version", kVersion).add("embedded", embedded_files_hash());
    // The inputs' bytes; their paths are in the wrappers' #include lines.
    for (const auto& f : in.files) {
        k.add("input.path", b.hide(physical_normal(f.path).string()));
        k.add("input.sha256", sha256_hex(f.text));
    }
    // Files the flags make the tools read (toolchain/flag_files.hpp).
    for (const auto& f : in.flag_files)
        k.add("flag_file.path", b.hide(f.path.string())).add("flag_file.sha256", f.sha256);
    // The commands name the tools by path; this says which binaries they are.
    k.add("nvcc", in.nvcc ? in.nvcc->identity() : "").add("nvcc_version", in.nvcc_version);
    // A pip toolkit's headers come in wheels that upgrade apart from nvcc.
    if (!in.nvcc_wheels.empty()) k.add_list("nvcc.wheels", in.nvcc_wheels);
    k.add("cxx", in.cxx.identity()).add("cxx_version", in.cxx_version);
    // The compilers' and the linker's environment (toolchain/compiler_env.hpp):
    // only the variables that are set, so set-but-empty and unset differ. The
    // path lists also as the directories they mean here, since relative and
    // empty elements depend on the working directory.
    for (const auto& [name, value] : in.env.values)
        k.add("env." + name, is_search_path(name) ? b.hide(value) : value);
    auto dirs = [&](std::string_view label, const std::vector<fs::path>& list) {
        if (list.empty()) return;
        std::vector<std::string> items;
        for (const auto& d : list) items.push_back(b.hide(d.string()));
        k.add_list(label, items);
    };
    dirs("env.include_dirs", in.env.include_dirs);
    dirs("env.system_include_dirs", in.env.system_include_dirs);
    dirs("env.library_dirs", in.env.library_dirs);
    // The include directories in the compile flags, as the directories they
    // mean here: a relative -Iinc names another from another directory.
    std::vector<fs::path> flag_dirs;
    for (const auto& d : flag_include_dirs(in)) flag_dirs.push_back(physical_normal(d));
    dirs("flags.include_dirs", flag_dirs);
    // Every step of the build, as it would run with the build and cache
    // directories as placeholders: whatever changes a command or a file
    // bekc writes changes the key, with no list of options kept here.
    for (const Step& step : graph.steps) {
        k.add("step", step_kind_name(step.kind));
        if (step.runs()) {
            std::vector<std::string> argv;
            const auto& all = step.command.argv;
            for (size_t i = 0; i < all.size(); ++i)
                argv.push_back(hide_argument(b, i ? std::string_view(all[i - 1]) : "", all[i]));
            k.add_list("step.argv", argv);
            if (!step.command.cwd.empty()) k.add("step.cwd", b.hide(step.command.cwd));
            for (const auto& [name, value] : step.command.env_overrides)
                k.add("step.env." + name, value);
        } else {
            k.add_list("step.writes", step.command.outputs);
            if (!step.content.empty())
                k.add("step.content.sha256", sha256_hex(b.hide(step.content)));
        }
    }
    return k;
}

namespace {

// The site directory `p` is installed under: the path up to its last
// site-packages or dist-packages component; empty when none.
fs::path python_site_of(const fs::path& p) {
    fs::path site, walked;
    for (const auto& part : p) {
        walked /= part;
        if (part == "site-packages" || part == "dist-packages") site = walked;
    }
    return site;
}

// An input's path in the portable key: inline sources relative to the own
// cache, others relative to `b`.
std::string portable_input_path(const BuildInputs& in, const BaseDir& b, const fs::path& path) {
    fs::path p = physical_normal(path);
    fs::path inline_dir = in.cache_root / CacheLayout::inline_sources_dir();
    if (path_is_under(p, inline_dir))
        return "<cache>/src/" + p.lexically_relative(inline_dir).string();
    return b.hide(p.string());
}

}  // namespace

BaseDir portable_base(const BuildInputs& in) {
    if (!in.base.empty()) return in.base;
    for (const auto& f : in.files)
        if (fs::path site = python_site_of(physical_normal(f.path)); !site.empty())
            return BaseDir(site);
    return {};
}

KeyBuilder portable_key_builder(const BuildInputs& in, const BuildOptions& o) {
    KeyBuilder k("portable");
    const BaseDir b = portable_base(in);
    k.add("bekc_version", kVersion).add("embedded", embedded_files_hash());
    k.add("name", in.name).add("target_prefix", in.target_prefix);
    for (const auto& f : in.files) {
        k.add("input.path", portable_input_path(in, b, f.path));
        k.add("input.sha256", sha256_hex(f.text));
        for (const auto& fn : f.functions)
            k.add("input.function", fn.name).add_list("input.function.spec", fn.canonical_tokens());
    }
    for (const auto& f : in.flag_files)
        k.add("flag_file.path", b.hide(f.path.string())).add("flag_file.sha256", f.sha256);
    // The options as given, but for the archs (checked against the machine)
    // and the paths: the include directories as they mean here, and the
    // inputs and the --functions file by their bytes above.
    BuildOptions kept = library_options(o);
    kept.inputs.clear();
    kept.arch = BuildOptions().arch;
    kept.functions_json.clear();
    kept.flags.include_dirs.clear();
    for (const auto& d : in.flags.include_dirs)
        kept.flags.include_dirs.push_back(b.hide(physical_normal(d).string()));
    k.add_list("options", to_argv(kept));
    for (const auto& [name, value] : in.env.values)
        k.add("env." + name, is_search_path(name) ? b.hide(value) : value);
    return k;
}

KeyBuilder full_key_builder(const std::string& direct_key, const DependencySet& deps,
                            const BaseDir& base) {
    KeyBuilder k("build");
    k.add("direct_key", direct_key);
    for (const auto& [path, sha] : deps.hashed)
        k.add("dep.path", base.hide(path)).add("dep.sha256", sha);
    return k;
}

}  // namespace bekc
