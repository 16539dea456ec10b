#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "driver/fatal.hpp"
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

void show_tool(const char* what, const std::expected<Tool, Error>& found) {
    if (!found) {
        std::printf("%-14s NOT FOUND\n               %s\n", what, found.error().render().c_str());
        return;
    }
    ProcessRunner runner;
    std::printf("%-14s %s (version %s)\n", what, found->path.c_str(),
                tool_version(*found, runner).c_str());
}

// nvcc, why it was chosen (toolchain/nvcc_search.hpp) and its include
// directories; a pip toolkit's wheels.
void show_nvcc(const ToolLookup& lookup) {
    auto c = find_nvcc(NvccRequest{}, lookup);
    if (!c) return show_tool("nvcc", std::unexpected(c.error()));
    show_tool("nvcc", c->tool);
    std::printf("%-14s %s\n", "nvcc chosen by", c->how.c_str());
    std::string dirs;
    for (const auto& d : toolkit_include_dirs(c->tool))
        dirs += (dirs.empty() ? "" : ", ") + d.string();
    std::printf("%-14s %s\n", "CUDA include", dirs.empty() ? "none found" : dirs.c_str());
    std::string wheels;
    for (const auto& w : pip_toolkit_wheels(c->tool)) wheels += (wheels.empty() ? "" : ", ") + w;
    if (!wheels.empty()) std::printf("%-14s %s\n", "CUDA wheels", wheels.c_str());
}

void show_cache(const char* what, const Cache& cache) {
    if (auto s = cache.stats())
        std::printf("%-14s %s (%zu entries, %s)\n", what, cache.path().c_str(), s->entries,
                    format_size(s->bytes).c_str());
    else
        std::printf("%-14s %s (%s)\n", what, cache.path().c_str(), s.error().message.c_str());
}

// The own cache, then each read-only cache a build looks in after it, or why
// it is skipped (store/cache_layers.hpp).
void show_caches(const CacheLayers& layers) {
    show_cache("cache", Cache(layers.own));
    for (const auto& dir : layers.read_only)
        show_cache("read-only", Cache(dir, {}, CacheAccess::ReadOnly));
    for (const auto& skipped : layers.skipped)
        std::printf("%-14s %s (skipped: %s)\n", "read-only", skipped.dir.c_str(),
                    skipped.why.c_str());
}

int doctor(const std::optional<std::string>& cache_dir,
           const std::optional<std::string>& read_only_caches) {
    Settings settings = load_settings_or_exit(cache_dir);
    ToolLookup lookup = ToolLookup::system();
    lookup.env = settings.lookup();
    std::printf("bekc           %s\n", kVersion);
    show_nvcc(lookup);
    show_tool("host compiler", find_cxx(std::nullopt, lookup));
    CacheLayers layers =
        or_fatal(resolve_cache_layers(cache_dir, read_only_caches, lookup.env, fs::current_path()));
    const fs::path& root = layers.own;
    ProcessRunner runner;
    GpuDetection gpus = detect_gpus(root, runner, lookup);
    std::printf("%-14s %s (%s)\n", "GPUs",
                gpus.archs.empty() ? "none" : arch_list_string(gpus.archs).c_str(),
                gpus.how.c_str());
    show_caches(layers);
    std::printf("%-14s %s\n", "runtime hdrs", runtime_include_dir(root).c_str());
    std::optional<fs::path> python = lookup.find("python3");
    std::string jax = "python3 not found on PATH";
    if (python) {
        Command c;
        c.argv = {python->string(), "-c",
                  "import jax; print(jax.__version__, jax.default_backend())"};
        ParallelOptions limit;
        limit.run.timeout = std::chrono::seconds(60);
        ProcessResult r = runner.run({c}, 1, {}, limit).front();
        jax = r.ok()
                  ? "jax " + r.output.substr(0, r.output.find('\n')) + " (" + python->string() + ")"
                  : "not importable from " + python->string();
    }
    std::printf("%-14s %s\n", "Python/JAX", jax.c_str());
    return kExitOk;
}

}  // namespace

Action add_doctor_command(CLI::App& app) {
    auto dir = std::make_shared<std::optional<std::string>>();
    auto read_only = std::make_shared<std::optional<std::string>>();
    CLI::App* cmd =
        app.add_subcommand("doctor", "Show the toolchain, GPUs, caches and Python bekc would use");
    cmd->add_option("--cache-dir", *dir, "Cache directory");
    cmd->add_option("--read-only-caches", *read_only,
                    "Read-only caches, DIR[:DIR...] (default: $BEKC_READ_ONLY_CACHES)");
    return [dir, read_only] { return doctor(*dir, *read_only); };
}

}  // namespace bekc::cli
