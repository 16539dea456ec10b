#include "graph/plan_build.hpp"

#include <algorithm>

#include "codegen/wrapper.hpp"
#include "plan/nvcc_phases.hpp"
#include "store/hash.hpp"
#include "store/runtime_headers.hpp"
#include "toolchain/compiler_env.hpp"
#include "toolchain/link_search.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/python_env.hpp"
#include "toolchain/safe_paths.hpp"
#include "util/text.hpp"

namespace bekc {

GraphPaths graph_paths(const BuildInputs& in, const fs::path& build_dir) {
    GraphPaths p;
    p.build_dir = build_dir;
    p.runtime_include = runtime_include_dir(in.cache_root);
    p.runtime_object = runtime_object_path(runtime_object_id(in));
    p.runtime_headers_ready = runtime_headers_ready(in.cache_root);
    p.runtime_object_ready = runtime_object_ready(runtime_object_id(in));
    return p;
}

namespace {

// nvcc hands paths to a shell and splits some at commas: it gets plain-named
// links to the directories it cannot take as they are (toolchain/safe_paths.hpp).
std::expected<void, Error> use_nvcc_safe_paths(PlanRequest& req, const GraphPaths& paths,
                                               const PrivateDirPlaces& places) {
    auto own = [&](const fs::path& dir, fs::path& out) -> std::expected<void, Error> {
        auto link = own_path_for_nvcc(dir, places);
        if (!link) return std::unexpected(link.error());
        out = std::move(*link);
        return {};
    };
    auto safe = [&](const fs::path& dir, auto& out) -> std::expected<void, Error> {
        auto link = safe_path_for_nvcc(dir, places);
        if (!link) return std::unexpected(link.error());
        out = link->string();
        return {};
    };
    if (auto ok = own(paths.runtime_include, req.runtime_include); !ok) return ok;
    for (auto& d : req.flags.include_dirs)
        if (auto ok = safe(d, d); !ok) return ok;
    for (auto* dirs : {&req.toolkit_includes, &req.toolkit_system_includes, &req.toolkit_libs})
        for (auto& d : *dirs)
            if (auto ok = safe(d, d); !ok) return ok;
    if (!req.flags.xla_include.empty())
        if (auto ok = safe(req.flags.xla_include, req.flags.xla_include); !ok) return ok;
    fs::path object_dir;
    if (auto ok = own(paths.runtime_object.parent_path(), object_dir); !ok) return ok;
    req.runtime_object = object_dir / paths.runtime_object.filename();
    auto ccbin = safe_ccbin(req.cxx.path, places);
    if (!ccbin) return std::unexpected(ccbin.error());
    req.cxx.path = std::move(*ccbin);
    return {};
}

// The wrappers (and their texts) and the entry points of `in` in `req`,
// written into paths.build_dir.
std::expected<void, Error> add_units(GraphRequest& g, const BuildInputs& in,
                                     const GraphPaths& paths) {
    PlanRequest& req = g.plan;
    std::vector<WrapperRequest> wrappers;
    for (size_t i = 0; i < in.files.size(); ++i) {
        const SourceFile& f = in.files[i];
        fs::path wrapper = paths.build_dir / (std::to_string(i) + "_" + f.path.stem().string() +
                                              ".bekc" + (f.cuda ? ".cu" : ".cpp"));
        wrappers.push_back({input_name(f.path), f.path.string(), wrapper.string(), in.target_prefix,
                            f.functions, i});
        auto text = render_wrapper(wrappers.back());
        if (!text) return std::unexpected(text.error());
        g.wrapper_texts.push_back(std::move(*text));
        req.units.push_back(
            {wrapper, f.cuda, f.path.string(), f.cuda ? nvcc_source_path(in, i, wrapper) : ""});
    }
    req.handlers = paths.build_dir / "bekc_handlers.cpp";
    g.handlers_text = render_handlers(in.library_file(), wrappers);
    return {};
}

}  // namespace

std::expected<BuildGraph, Error> plan_graph(const BuildInputs& in, const GraphPaths& paths) {
    GraphRequest g;
    PlanRequest& req = g.plan;
    req.nvcc = in.nvcc;
    req.cxx = in.cxx;
    req.archs = in.archs;
    req.flags = in.flags;
    req.runtime_include = paths.runtime_include;
    req.runtime_object = paths.runtime_object;
    if (in.nvcc) {
        ToolkitDirs toolkit = pip_toolkit_dirs(*in.nvcc);
        req.toolkit_includes = std::move(toolkit.include);
        req.toolkit_system_includes = std::move(toolkit.system_include);
        req.toolkit_libs = std::move(toolkit.lib);
        req.cudart_library = in.cudart_library;
    }
    if (in.nvcc && paths.nvcc_safe_paths)
        if (auto ok = use_nvcc_safe_paths(req, paths, in.private_places); !ok)
            return std::unexpected(ok.error());
    req.library = paths.build_dir / in.library_file();
    if (paths.launcher) req.launcher = in.launcher;
    req.device_threads = paths.device_threads;
    req.nvcc_objtemp = in.nvcc && nvcc_takes_objtemp(in.nvcc_version);
    req.nvcc_nodlink = in.nvcc && nvcc_takes_nodlink(in.nvcc_version);
    req.link_reads_opaque_code = in.link_reads_opaque_code;
    if (in.nvcc) req.link_env = nvcc_link_env(in.env);
    req.base_dir = in.base.dir();
    req.nvcc_maps_base_dir = fits_nvcc_compiler_option(in.base.dir());
    req.build_dir = paths.build_dir.string();
    req.nvcc_maps_build_dir = fits_nvcc_compiler_option(req.build_dir);
    // The linker lists the files it read. nvcc splits -Xlinker values at
    // commas: a path with one is not asked for, and the flags stand in
    // (graph/dependencies.cpp).
    fs::path link_depfile = paths.build_dir / "link.d";
    if (paths.link_depfile && (!in.nvcc || link_depfile.string().find(',') == std::string::npos))
        req.link_depfile = link_depfile;
    if (auto ok = add_units(g, in, paths); !ok) return std::unexpected(ok.error());
    g.write_runtime_headers = !paths.runtime_headers_ready;
    if (!paths.runtime_object_ready) g.compile_runtime_object = paths.build_dir / "bekc_rt.o";
    return make_build_graph(g);
}

namespace {

// A tool nvcc names without a directory (cudafe++, ptxas, fatbinary), found
// in the PATH nvcc sets for its tools.
bool resolve_programs(NvccPipeline& p, const ToolLookup& tools) {
    std::string path;
    for (const auto& [name, value] : p.env)
        if (name == "PATH") path = value;
    for (auto& phase : p.phases) {
        std::string& program = phase.argv.front();
        if (program.find('/') != std::string::npos) continue;
        std::optional<fs::path> found;
        for (const auto& element : split_path_list(path)) {
            fs::path dir = element;
            if (dir.is_absolute() && tools.executable(dir / program)) {
                found = dir / program;
                break;
            }
        }
        if (!found) return false;
        program = found->string();
    }
    return true;
}

}  // namespace

std::string input_name(const fs::path& input) {
    return physical_normal(input).string();
}

std::string nvcc_source_path(const BuildInputs& in, size_t unit, const fs::path& wrapper) {
    fs::path path = fs::path(input_name(in.files.at(unit).path)).parent_path() / wrapper.filename();
    std::string name = path.string();
    if (!in.base.empty() && path_is_under(path, in.base.dir()))
        name = "./" + path.lexically_relative(in.base.dir()).string();
    if (fits_nvcc_compiler_option(name)) return name;
    return "/bekc-source/" + sha256_hex(name).substr(0, 32) + "/" + std::to_string(unit) + ".cu";
}

void split_nvcc_compiles(BuildGraph& graph, const BuildInputs& in, Runner& runner,
                         const ToolLookup& tools, const CompileTimes* module_ids) {
    if (!in.nvcc || (tools.env && tools.env("BEKC_SPLIT_NVCC") == "0")) return;
    // From the last step back: a split moves only the steps after it.
    for (size_t i = graph.steps.size(); i-- > 0;) {
        const Step& s = graph.steps[i];
        if (s.kind != StepKind::Compile || !s.unit || *s.unit >= in.files.size() ||
            !in.files[*s.unit].cuda)
            continue;
        Command dry;
        // The flags nvcc sees, its environment's too, decide on a device link.
        dry.argv = nvcc_dryrun_argv(s.command, nvcc_env_flags(in.env).around(in.flags.cuda_flags));
        if (dry.argv.empty()) continue;
        dry.cwd = s.command.cwd;
        dry.description = "nvcc --dryrun";
        ProcessResult r = runner.run_one(dry);
        if (!r.ok()) continue;
        auto pipeline = parse_nvcc_dryrun(r.output);
        if (!pipeline || !resolve_programs(*pipeline, tools)) continue;
        const std::string input = input_name(in.files[*s.unit].path);
        std::string orig = nvcc_source_path(in, *s.unit, s.command.inputs.front());
        std::optional<std::string> id = module_ids ? module_ids->module_id(input) : std::nullopt;
        (void)split_nvcc_compile(graph, *pipeline, {i, in.cxx.path, orig, id.value_or("")});
    }
}

std::expected<BuildGraph, Error> key_graph(const BuildInputs& in) {
    GraphPaths p;
    p.build_dir = "/$BEKC_BUILD";
    p.runtime_include = "/$BEKC_RUNTIME/include";
    p.runtime_object = "/$BEKC_RUNTIME/obj/bekc_rt.o";
    p.launcher = false;
    return plan_graph(in, p);
}

int device_threads_for(const BuildInputs& in, int jobs, bool runtime_object) {
    if (!in.nvcc) return 1;
    int compiles = static_cast<int>(in.files.size()) + (runtime_object ? 1 : 0);
    return std::clamp(jobs / std::max(compiles, 1), 1, std::max(1, device_compilations(in.archs)));
}

fs::path build_dir_name(const BuildInputs& in, const std::string& direct_key) {
    // The cache's path is part of the name: the same inputs may be built for
    // two caches at once.
    return "build." + sha256_hex(in.cache_root.string() + "\n" + direct_key).substr(0, 32);
}

}  // namespace bekc
