#include "graph/recipe.hpp"

#include <algorithm>

#include "store/hash.hpp"
#include "store/runtime_headers.hpp"
#include "toolchain/compiler_env.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/python_env.hpp"
#include "toolchain/safe_paths.hpp"

namespace bekc {

GraphRecipe graph_recipe(const BuildInputs& in) {
    GraphRecipe r;
    PlanRequest& req = r.request.plan;
    req.nvcc = in.nvcc;
    req.cxx = in.cxx;
    req.archs = in.archs;
    req.flags = in.flags;
    if (in.nvcc) {
        ToolkitDirs toolkit = pip_toolkit_dirs(*in.nvcc);
        req.toolkit_includes = std::move(toolkit.include);
        req.toolkit_system_includes = std::move(toolkit.system_include);
        req.toolkit_libs = std::move(toolkit.lib);
        req.cudart_library = in.cudart_library;
    }
    req.nvcc_objtemp = in.nvcc && nvcc_takes_objtemp(in.nvcc_version);
    req.nvcc_nodlink = in.nvcc && nvcc_takes_nodlink(in.nvcc_version);
    req.link_reads_opaque_code = in.link_reads_opaque_code;
    if (in.nvcc) req.link_env = nvcc_link_env(in.env);
    req.base_dir = in.base.dir();
    req.nvcc_maps_base_dir = fits_nvcc_compiler_option(in.base.dir());
    for (size_t i = 0; i < in.files.size(); ++i) {
        const SourceFile& f = in.files[i];
        fs::path wrapper =
            std::to_string(i) + "_" + f.path.stem().string() + ".bekc" + (f.cuda ? ".cu" : ".cpp");
        r.wrappers.push_back({input_name(f.path), f.path.string(), wrapper.string(),
                              in.target_prefix, f.functions, i});
        req.units.push_back(
            {wrapper, f.cuda, f.path.string(), f.cuda ? nvcc_source_path(in, i, wrapper) : ""});
    }
    r.library_file = in.library_file();
    r.launcher = in.launcher;
    r.any_cuda = in.nvcc.has_value();
    return r;
}

namespace {

// The directories nvcc reads through the links it was given.
void use_nvcc_links(PlanRequest& req, const NvccLinks& links, const GraphDirs& dirs) {
    auto linked = [&](const std::string& dir) {
        auto it = links.dirs.find(dir);
        return it == links.dirs.end() ? dir : it->second;
    };
    req.runtime_include = links.runtime_include;
    for (auto& d : req.flags.include_dirs) d = linked(d);
    for (auto* list : {&req.toolkit_includes, &req.toolkit_system_includes, &req.toolkit_libs})
        for (auto& d : *list) d = linked(d.string());
    if (!req.flags.xla_include.empty()) req.flags.xla_include = linked(req.flags.xla_include);
    req.runtime_object = links.runtime_object_dir / dirs.runtime_object.filename();
    req.cxx.path = links.cxx;
}

}  // namespace

std::expected<BuildGraph, Error> fill_in(const GraphRecipe& recipe, const GraphDirs& dirs) {
    GraphRequest g = recipe.request;
    PlanRequest& req = g.plan;
    const fs::path& build = dirs.build_dir;
    req.runtime_include = dirs.runtime_include;
    req.runtime_object = dirs.runtime_object;
    if (recipe.any_cuda && dirs.nvcc_links) use_nvcc_links(req, *dirs.nvcc_links, dirs);
    req.library = build / recipe.library_file;
    if (dirs.launcher) req.launcher = recipe.launcher;
    req.device_threads = dirs.device_threads;
    req.build_dir = build.string();
    req.nvcc_maps_build_dir = fits_nvcc_compiler_option(req.build_dir);
    // The linker lists the files it read. nvcc splits -Xlinker values at
    // commas: a path with one is not asked for, and the flags stand in
    // (graph/dependencies.cpp).
    fs::path link_depfile = build / "link.d";
    if (dirs.link_depfile &&
        (!recipe.any_cuda || link_depfile.string().find(',') == std::string::npos))
        req.link_depfile = link_depfile;
    std::vector<WrapperRequest> wrappers = recipe.wrappers;
    for (size_t i = 0; i < req.units.size() && i < wrappers.size(); ++i) {
        req.units[i].wrapper = build / req.units[i].wrapper;
        wrappers[i].wrapper_name = req.units[i].wrapper.string();
        auto text = render_wrapper(wrappers[i]);
        if (!text) return std::unexpected(text.error());
        g.wrapper_texts.push_back(std::move(*text));
    }
    req.handlers = build / "bekc_handlers.cpp";
    g.handlers_text = render_handlers(recipe.library_file, wrappers);
    g.write_runtime_headers = !dirs.runtime_headers_ready;
    if (!dirs.runtime_object_ready) g.compile_runtime_object = build / "bekc_rt.o";
    return make_build_graph(g);
}

GraphDirs placeholder_dirs() {
    GraphDirs d;
    d.build_dir = "/$BEKC_BUILD";
    d.runtime_include = "/$BEKC_RUNTIME/include";
    d.runtime_object = "/$BEKC_RUNTIME/obj/bekc_rt.o";
    d.launcher = false;
    return d;
}

GraphDirs build_dirs(const BuildInputs& in, const fs::path& build_dir) {
    GraphDirs d;
    d.build_dir = build_dir;
    d.runtime_include = runtime_include_dir(in.cache_root);
    d.runtime_object = runtime_object_path(runtime_object_id(in));
    d.runtime_headers_ready = runtime_headers_ready(in.cache_root);
    d.runtime_object_ready = runtime_object_ready(runtime_object_id(in));
    return d;
}

std::expected<NvccLinks, Error> make_nvcc_links(const GraphRecipe& recipe, const GraphDirs& dirs,
                                                const PrivateDirPlaces& places) {
    const PlanRequest& req = recipe.request.plan;
    NvccLinks links;
    auto own = own_path_for_nvcc(dirs.runtime_include, places);
    if (!own) return std::unexpected(own.error());
    links.runtime_include = std::move(*own);
    auto add = [&](const fs::path& dir) -> std::expected<void, Error> {
        auto link = safe_path_for_nvcc(dir, places);
        if (!link) return std::unexpected(link.error());
        links.dirs[dir.string()] = link->string();
        return {};
    };
    for (const auto& d : req.flags.include_dirs)
        if (auto ok = add(d); !ok) return std::unexpected(ok.error());
    for (const auto* list :
         {&req.toolkit_includes, &req.toolkit_system_includes, &req.toolkit_libs})
        for (const auto& d : *list)
            if (auto ok = add(d); !ok) return std::unexpected(ok.error());
    if (!req.flags.xla_include.empty())
        if (auto ok = add(req.flags.xla_include); !ok) return std::unexpected(ok.error());
    auto object_dir = own_path_for_nvcc(dirs.runtime_object.parent_path(), places);
    if (!object_dir) return std::unexpected(object_dir.error());
    links.runtime_object_dir = std::move(*object_dir);
    auto cxx = safe_ccbin(req.cxx.path, places);
    if (!cxx) return std::unexpected(cxx.error());
    links.cxx = std::move(*cxx);
    return links;
}

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
