// `bekc doctor [--json]`: the toolchain, GPUs, caches and Python a build
// would use. What it finds is one JSON value, which --json prints and the
// text form reads, so the two never say different things.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "driver/fatal.hpp"
#include "json_output.hpp"
#include "run/process.hpp"
#include "run/runner.hpp"
#include "store/cache.hpp"
#include "store/cache_layers.hpp"
#include "store/runtime_headers.hpp"
#include "store/size.hpp"
#include "toolchain/gpu_detect.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/tools.hpp"
#include "util/error.hpp"
#include "util/version.hpp"

namespace bekc::cli {

namespace {

using Json = nlohmann::ordered_json;

struct DoctorOptions {
    std::optional<std::string> cache_dir, read_only_caches;
    bool json = false;
};

Json or_null(const std::string& s) {
    return s.empty() ? Json(nullptr) : Json(s);
}

Json tool_json(const std::expected<Tool, Error>& found, Runner& runner) {
    if (!found) return {{"found", false}, {"error", found.error().render()}};
    return {
        {"found", true}, {"path", found->path.string()}, {"version", tool_version(*found, runner)}};
}

// nvcc, why it was chosen (toolchain/nvcc_search.hpp), its include
// directories and a pip toolkit's wheels.
Json nvcc_json(const ToolLookup& lookup, Runner& runner) {
    auto c = find_nvcc(NvccRequest{}, lookup);
    if (!c) return tool_json(std::unexpected(c.error()), runner);
    Json out = tool_json(c->tool, runner);
    out["chosen_by"] = c->how;
    Json dirs = Json::array();
    for (const auto& d : toolkit_include_dirs(c->tool)) dirs.push_back(d.string());
    out["include_dirs"] = dirs;
    out["wheels"] = pip_toolkit_wheels(c->tool);
    return out;
}

Json cache_json(const Cache& cache, const char* role) {
    auto s = cache.stats();
    return {{"path", cache.path().string()},
            {"role", role},
            {"entries", s ? Json(s->entries) : Json(nullptr)},
            {"bytes", s ? Json(s->bytes) : Json(nullptr)},
            {"problem", s ? Json(nullptr) : Json(s.error().message)}};
}

// The own cache, then each read-only cache a build looks in after it, then
// those it skips, with why (store/cache_layers.hpp).
Json caches_json(const CacheLayers& layers) {
    Json out = Json::array();
    out.push_back(cache_json(Cache(layers.own), "own"));
    for (const auto& dir : layers.read_only)
        out.push_back(cache_json(Cache(dir, {}, CacheAccess::ReadOnly), "read-only"));
    for (const auto& skipped : layers.skipped)
        out.push_back({{"path", skipped.dir.string()},
                       {"role", "skipped"},
                       {"entries", nullptr},
                       {"bytes", nullptr},
                       {"problem", skipped.why}});
    return out;
}

// python3 on PATH and the JAX it imports, asked with a minute's patience.
Json python_json(const ToolLookup& lookup, Runner& runner) {
    std::optional<fs::path> python = lookup.find("python3");
    if (!python)
        return {{"path", nullptr},
                {"jax", nullptr},
                {"backend", nullptr},
                {"problem", "python3 not found on PATH"}};
    Command c;
    c.argv = {python->string(), "-c", "import jax; print(jax.__version__, jax.default_backend())"};
    ParallelOptions limit;
    limit.run.timeout = std::chrono::seconds(60);
    ProcessResult r = runner.run({c}, 1, {}, limit).front();
    std::string line = r.ok() ? r.output.substr(0, r.output.find('\n')) : "";
    size_t space = line.find(' ');
    return {{"path", python->string()},
            {"jax", r.ok() ? or_null(line.substr(0, space)) : Json(nullptr)},
            {"backend", r.ok() && space != std::string::npos ? or_null(line.substr(space + 1))
                                                             : Json(nullptr)},
            {"problem", r.ok() ? Json(nullptr) : Json("jax is not importable")}};
}

Json gpus_json(const fs::path& root, const ToolLookup& lookup, Runner& runner) {
    GpuDetection gpus = detect_gpus(root, runner, lookup);
    Json archs = Json::array();
    for (const Arch& a : gpus.archs) archs.push_back(a.sm());
    return {{"archs", archs}, {"how", gpus.how}};
}

Json doctor_json(const DoctorOptions& o) {
    Settings settings = load_settings_or_exit(o.cache_dir);
    ToolLookup lookup = ToolLookup::system();
    lookup.env = settings.lookup();
    ProcessRunner runner;
    Json out;
    out["bekc"] = {{"version", kVersion}, {"commit", kBuildCommit}};
    out["nvcc"] = nvcc_json(lookup, runner);
    out["host_compiler"] = tool_json(find_cxx(std::nullopt, lookup), runner);
    CacheLayers layers = or_fatal(
        resolve_cache_layers(o.cache_dir, o.read_only_caches, lookup.env, fs::current_path()));
    out["gpus"] = gpus_json(layers.own, lookup, runner);
    out["caches"] = caches_json(layers);
    out["runtime_headers"] = runtime_include_dir(layers.own).string();
    out["python"] = python_json(lookup, runner);
    return out;
}

std::string joined(const Json& list, const char* separator = ", ") {
    std::string out;
    for (const auto& item : list) out += (out.empty() ? "" : separator) + item.get<std::string>();
    return out;
}

void print_line(const char* what, const std::string& text) {
    std::printf("%-14s %s\n", what, text.c_str());
}

void print_tool(const char* what, const Json& tool) {
    if (!tool["found"].get<bool>()) {
        std::printf("%-14s NOT FOUND\n               %s\n", what,
                    tool["error"].get<std::string>().c_str());
        return;
    }
    print_line(what, tool["path"].get<std::string>() + " (version " +
                         tool["version"].get<std::string>() + ")");
}

void print_cache(const Json& c) {
    std::string path = c["path"].get<std::string>();
    std::string role = c["role"].get<std::string>();
    const char* what = role == "own" ? "cache" : "read-only";
    if (role == "skipped")
        print_line(what, path + " (skipped: " + c["problem"].get<std::string>() + ")");
    else if (!c["problem"].is_null())
        print_line(what, path + " (" + c["problem"].get<std::string>() + ")");
    else
        print_line(what, path + " (" + std::to_string(c["entries"].get<size_t>()) + " entries, " +
                             format_size(c["bytes"].get<uint64_t>()) + ")");
}

void print_text(const Json& d) {
    print_line("bekc", d["bekc"]["version"].get<std::string>());
    const Json& nvcc = d["nvcc"];
    print_tool("nvcc", nvcc);
    if (nvcc["found"].get<bool>()) {
        print_line("nvcc chosen by", nvcc["chosen_by"].get<std::string>());
        std::string dirs = joined(nvcc["include_dirs"]);
        print_line("CUDA include", dirs.empty() ? "none found" : dirs);
        if (!nvcc["wheels"].empty()) print_line("CUDA wheels", joined(nvcc["wheels"]));
    }
    print_tool("host compiler", d["host_compiler"]);
    const Json& gpus = d["gpus"];
    std::string archs = joined(gpus["archs"], ",");
    print_line("GPUs",
               (archs.empty() ? "none" : archs) + " (" + gpus["how"].get<std::string>() + ")");
    for (const Json& c : d["caches"]) print_cache(c);
    print_line("runtime hdrs", d["runtime_headers"].get<std::string>());
    const Json& py = d["python"];
    if (py["path"].is_null())
        print_line("Python/JAX", py["problem"].get<std::string>());
    else if (py["jax"].is_null())
        print_line("Python/JAX", "not importable from " + py["path"].get<std::string>());
    else
        print_line("Python/JAX",
                   "jax " + py["jax"].get<std::string>() +
                       (py["backend"].is_null() ? "" : " " + py["backend"].get<std::string>()) +
                       " (" + py["path"].get<std::string>() + ")");
}

}  // namespace

Action add_doctor_command(CLI::App& app) {
    auto o = std::make_shared<DoctorOptions>();
    CLI::App* cmd =
        app.add_subcommand("doctor", "Show the toolchain, GPUs, caches and Python bekc would use");
    cmd->add_option("--cache-dir", o->cache_dir, "Cache directory");
    cmd->add_option("--read-only-caches", o->read_only_caches,
                    "Read-only caches, DIR[:DIR...] (default: $BEKC_READ_ONLY_CACHES)");
    cmd->add_flag("--json", o->json,
                  "Print one JSON object: bekc, nvcc, host_compiler, gpus, caches, "
                  "runtime_headers, python (docs/cli.md, \"Scripting\")");
    return [o] {
        Json d = doctor_json(*o);
        if (o->json)
            print_json(d);
        else
            print_text(d);
        return static_cast<int>(kExitOk);
    };
}

}  // namespace bekc::cli
