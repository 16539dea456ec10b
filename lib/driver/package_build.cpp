#include "driver/package_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "driver/compile_times.hpp"
#include "driver/xla_headers.hpp"
#include "run/jobserver.hpp"
#include "run/parallel.hpp"
#include "scan/python_loads.hpp"
#include "scan/scanner.hpp"
#include "store/layout.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

bool is_kernel_source(const fs::path& p) {
    return is_cuda_source(p.string()) || is_cpu_source(p.string());
}

// The keyword arguments that leave the library and its cache key unchanged:
// a call that passes only these (and `name`) is one the prebuild reproduces.
bool key_neutral(const std::string& keyword) {
    static const std::set<std::string> kNeutral = {
        "name", "allow_cuda_graph", "verbose", "auto_register", "replace", "force_rebuild"};
    return kNeutral.count(keyword) > 0;
}

// The file a load names: its path literals joined under the .py file's
// directory (`Path(__file__).parent / "_csr" / "x.cu"`, `.joinpath('x.cu')`).
std::optional<fs::path> loaded_file(const fs::path& py_dir, const KernelLoad& load) {
    if (load.path_parts.empty()) return std::nullopt;
    fs::path p = py_dir;
    for (const auto& part : load.path_parts) {
        if (part.empty() || fs::path(part).is_absolute()) return std::nullopt;
        p /= part;
    }
    std::error_code ec;
    if (!is_kernel_source(p) || !fs::is_regular_file(p, ec)) return std::nullopt;
    return resolved_path(p);
}

std::vector<fs::path> files_below(const fs::path& dir, bool (*want)(const fs::path&)) {
    std::vector<fs::path> out;
    std::error_code ec;
    // Symbolic links are not followed: a package is what its directory holds.
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_symlink(ec)) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file(ec) && want(it->path())) out.push_back(it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool is_python_module(const fs::path& p) {
    std::string n = p.filename().string();
    return p.extension() == ".py" && !(n.size() > 8 && n.substr(n.size() - 8) == "_test.py");
}

bool is_kernel_file(const fs::path& p) {
    return is_kernel_source(p);
}

}  // namespace

bool is_kernel_package(const BuildOptions& o) {
    if (o.inputs.size() != 1) return false;
    fs::path dir(o.inputs.front());
    std::error_code ec;
    if (!fs::is_directory(dir, ec) ||
        !fs::is_regular_file(dir / "include" / "brainevent" / "common.h", ec))
        return false;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && is_kernel_source(e.path())) return false;
    return true;
}

std::vector<PackageModule> plan_package(const fs::path& package) {
    fs::path root = resolved_path(package);
    std::map<fs::path, std::set<std::string>> names;  // file -> names it is loaded by
    std::map<std::pair<fs::path, std::string>, std::string> sites;
    for (const auto& py : files_below(root, is_python_module)) {
        auto text = read_file(py);
        if (!text) continue;
        for (const auto& load : find_kernel_loads(*text)) {
            bool reproducible =
                load.positional == 1 && !load.name.empty() && is_cxx_identifier(load.name) &&
                std::all_of(load.keywords.begin(), load.keywords.end(), key_neutral);
            if (!reproducible) continue;
            auto file = loaded_file(py.parent_path(), load);
            if (!file) continue;
            names[*file].insert(load.name);
            std::string site =
                py.lexically_relative(root).string() + ":" + std::to_string(load.line);
            sites.emplace(std::make_pair(*file, load.name), site);
        }
    }
    std::vector<PackageModule> out;
    for (const auto& file : files_below(root, is_kernel_file)) {
        fs::path f = resolved_path(file);
        auto it = names.find(f);
        if (it == names.end()) {
            std::string stem = f.stem().string();
            out.push_back({f, is_cxx_identifier(stem) ? stem : "module", ""});
            continue;
        }
        for (const auto& n : it->second) out.push_back({f, n, sites[{f, n}]});
    }
    return out;
}

std::vector<int> module_slots(size_t modules, int jobs,
                              const std::function<std::optional<double>(size_t)>& seconds) {
    std::vector<int> out(modules,
                         std::clamp(jobs / std::max<int>(1, static_cast<int>(modules)), 1, jobs));
    double total = 0;
    for (size_t i = 0; i < modules; ++i) {
        auto s = seconds(i);
        if (!s) return out;
        total += *s;
    }
    const double per_slot = total / jobs;
    if (per_slot <= 0) return out;
    for (size_t i = 0; i < modules; ++i)
        out[i] = std::clamp(static_cast<int>(std::ceil(*seconds(i) / per_slot)), 1, jobs);
    return out;
}

std::vector<Command> package_commands(const BuildOptions& o,
                                      const std::vector<PackageModule>& modules,
                                      const fs::path& self, const std::vector<int>& slots) {
    fs::path include = resolved_path(fs::path(o.inputs.front()) / "include");
    // Named explicitly, so each child keys on it whether or not its source
    // includes XLA's headers: bekc's Python loaders always pass it too.
    auto xla = find_xla_headers(o.xla_include, system_env());
    std::vector<std::string> common;
    for (const auto& d : o.flags.include_dirs) common.push_back("-I" + fs::absolute(d).string());
    common.push_back("-I" + include.string());
    if (xla) common.push_back("--xla-include=" + xla->dir.string());
    common.push_back("-O" + std::to_string(o.flags.opt_level));
    if (o.flags.fast_math) common.push_back("--fast-math");
    if (o.arch != "auto") common.push_back("--arch=" + o.arch);
    if (o.flags.cxx_std != "c++17") common.push_back("--std=" + o.flags.cxx_std);
    for (const auto& d : o.flags.defines) common.push_back("-D" + d);
    for (const auto& f : o.flags.cuda_flags) common.push_back("--cuda-flag=" + f);
    for (const auto& f : o.flags.cxx_flags) common.push_back("--cxx-flag=" + f);
    for (const auto& f : o.flags.ldflags) common.push_back("--ldflag=" + f);
    for (const auto& f : o.flags.linker_args) common.push_back("--linker-arg=" + f);
    common.push_back("--cache-dir=" + resolve_cache_root(o.cache_dir, system_env()).string());
    if (o.nvcc) common.push_back("--nvcc=" + *o.nvcc);
    if (o.nvcc_prefer) common.push_back("--nvcc-prefer=" + *o.nvcc_prefer);
    if (o.brainevent_nvcc) common.push_back("--brainevent-nvcc=" + *o.brainevent_nvcc);
    for (const auto& site : o.python_sites) common.push_back("--python-site=" + site);
    if (o.cxx) common.push_back("--cxx=" + *o.cxx);
    if (o.launcher) common.push_back("--launcher=" + *o.launcher);
    if (o.remote_cache) common.push_back("--remote-cache=" + *o.remote_cache);
    if (o.remote_read_only) common.push_back("--remote-cache-read-only");
    if (o.force) common.push_back("--force");
    if (o.no_cuda_graph) common.push_back("--no-cuda-graph");
    common.push_back("--json");
    common.push_back(o.verbose ? "-v" : "-q");
    auto makeflags = system_env()("MAKEFLAGS");
    const bool under_jobserver = makeflags && parse_makeflags(*makeflags);
    std::vector<Command> out;
    for (size_t i = 0; i < modules.size(); ++i) {
        const PackageModule& m = modules[i];
        Command c;
        c.argv = {self.string(), "build", m.source.string(), "--name=" + m.name};
        c.argv.insert(c.argv.end(), common.begin(), common.end());
        // The parallelism is across modules; a child gets more than one slot
        // (nvcc --threads) only where the package leaves it them.
        c.slots = i < slots.size() ? slots[i] : 1;
        c.argv.insert(c.argv.end(), {"-j", std::to_string(c.slots)});
        // The parent holds make's jobserver tokens for all of its children.
        if (under_jobserver) c.env_overrides = {{"MAKEFLAGS", ""}};
        c.description = m.source.filename().string() + " as " + m.name;
        c.inputs = {m.source.string()};
        out.push_back(std::move(c));
    }
    return out;
}

int run_package_build(const BuildOptions& o) {
    fs::path root = resolved_path(o.inputs.front());
    std::vector<PackageModule> modules = plan_package(root);
    if (modules.empty())
        throw FatalError(o.inputs.front() + ": error: the package holds no kernel file",
                         kExitUsage);
    // The modules that took longest last time start first, so the build does
    // not end waiting on one straggler (driver/compile_times.hpp).
    CompileTimes times(resolve_cache_root(o.cache_dir, system_env()));
    auto timing_name = [](const PackageModule& m) {
        return "package:" + m.source.string() + ":" + m.name;
    };
    const std::vector<size_t> order = longest_first(
        modules.size(), [&](size_t i) { return times.seconds(timing_name(modules[i])); });
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec)
        throw FatalError("bekc: error: cannot find its own executable: " + ec.message(),
                         kExitInternal);
    // Under `make -jN` the slots come from make's jobserver (run/jobserver.hpp).
    JobSlots job_slots = JobSlots::take(
        o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
        system_env());
    const int jobs = job_slots.count();
    std::vector<int> slots = module_slots(
        modules.size(), jobs, [&](size_t i) { return times.seconds(timing_name(modules[i])); });
    std::vector<Command> planned = package_commands(o, modules, self, slots);
    std::vector<Command> commands;  // in the order they start
    for (size_t i : order) commands.push_back(planned[i]);
    if (o.dry_run) {
        for (const auto& c : commands) std::printf("%s\n", display_command(c).c_str());
        return kExitOk;
    }
    size_t done = 0;
    ParallelOptions po;
    po.keep_going = true;
    auto started = run_parallel(
        commands, jobs,
        [&](const ProgressEvent& e) {
            if (e.kind != ProgressEvent::Kind::Finished || o.quiet) return;
            ++done;
            std::fprintf(stderr, "[%zu/%zu] %s: %s\n", done, commands.size(),
                         e.command.description.c_str(),
                         e.result->ok() ? "done" : e.result->describe().c_str());
        },
        po);
    std::vector<ProcessResult> results(modules.size());  // in the package's order
    for (size_t k = 0; k < order.size(); ++k) results[order[k]] = std::move(started[k]);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    int failed = 0, hits = 0;
    size_t as_loaded = 0;
    for (const auto& m : modules) as_loaded += m.load_site.empty() ? 0 : 1;
    for (size_t i = 0; i < results.size(); ++i)
        if (results[i].ok())
            times.record(timing_name(modules[i]),
                         std::chrono::duration<double>(results[i].wall_time).count());
    times.save();
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        const PackageModule& m = modules[i];
        if (!r.ok()) {
            ++failed;
            std::fprintf(stderr, "bekc: error: %s (as %s) failed:\n%s", m.source.c_str(),
                         m.name.c_str(), r.output.c_str());
            continue;
        }
        // The child's last line is its --json object.
        std::string out = r.output;
        while (!out.empty() && out.back() == '\n') out.pop_back();
        auto j = nlohmann::json::parse(out.substr(out.rfind('\n') + 1), nullptr, false);
        if (!j.is_object() || !j.contains("manifest")) {
            ++failed;
            std::fprintf(stderr, "bekc: error: %s: unexpected output:\n%s\n", m.source.c_str(),
                         r.output.c_str());
            continue;
        }
        hits += j.value("cache_hit", false) ? 1 : 0;
        list.push_back(
            {{"source", m.source.string()},
             {"name", m.name},
             {"loaded_at", m.load_site.empty() ? nlohmann::json() : nlohmann::json(m.load_site)},
             {"manifest", j["manifest"]},
             {"cache_hit", j.value("cache_hit", false)}});
    }
    if (!o.quiet)
        std::fprintf(stderr,
                     "bekc: %zu modules from %s: %zu as the package loads them, %zu under their "
                     "file names; %d were cache hits, %d failed\n",
                     modules.size(), root.c_str(), as_loaded, modules.size() - as_loaded, hits,
                     failed);
    if (o.json) {
        nlohmann::ordered_json j = {{"package", root.string()}, {"modules", list}};
        std::puts(j.dump().c_str());
    } else {
        for (const auto& m : list) std::puts(m["manifest"].get<std::string>().c_str());
    }
    return failed ? kExitSourceError : kExitOk;
}

}  // namespace bekc
