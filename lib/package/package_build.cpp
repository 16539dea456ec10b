#include "package/package_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "driver/fatal.hpp"
#include "package/child_builds.hpp"
#include "prep/build_args.hpp"
#include "run/interrupt.hpp"
#include "run/jobserver.hpp"
#include "scan/includes.hpp"
#include "scan/scanner.hpp"
#include "store/compile_times.hpp"
#include "store/layout.hpp"
#include "toolchain/xla_headers.hpp"
#include "util/env.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

bool is_kernel_source(const fs::path& p) {
    return is_cuda_source(p.string()) || is_cpu_source(p.string());
}

// A file below `root` whose path ends in "/<header>" (symbolic links not followed).
bool ships_header(const fs::path& root, const std::string& header) {
    const std::string tail = "/" + fs::path(header).lexically_normal().generic_string();
    return !files_below(root, [&tail](const fs::path& f) {
                const std::string p = f.generic_string();
                return p.size() > tail.size() &&
                       p.compare(p.size() - tail.size(), tail.size(), tail) == 0;
            }).files.empty();
}

// The flags of the load a module reproduces, after the package's own; a file
// only checked is linked without --no-undefined (`-zundefs` undoes it), so a
// library its load would link, which bekc cannot know, cannot fail its check.
void add_load_flags(CompileFlags& to, const PackageModule& m) {
    for (auto field : {&CompileFlags::cuda_flags, &CompileFlags::cxx_flags, &CompileFlags::ldflags,
                       &CompileFlags::linker_args})
        (to.*field).insert((to.*field).end(), (m.flags.*field).begin(), (m.flags.*field).end());
    if (m.load_site.empty()) to.linker_args.push_back("-zundefs");
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

std::vector<Command> package_commands(const BuildOptions& o,
                                      const std::vector<PackageModule>& modules,
                                      const fs::path& self, int jobs,
                                      const std::optional<std::string>& makeflags,
                                      const EnvLookup& env, const ChildTraces* traces) {
    const fs::path package = fs::absolute(o.inputs.front()).lexically_normal();
    fs::path include = resolved_path(package / "include");
    // Named explicitly, so each child keys on it whether or not its source
    // includes XLA's headers: bekc's Python loaders always pass it too. The
    // jaxlib beside the package first: the one its importer finds.
    auto xla = or_fatal(find_xla_headers(
        o.xla_include, env, {package.parent_path(), resolved_path(package).parent_path()}));
    // The options every module's build shares; what a child does not take
    // (outputs, exports, --dry-run, ...) stays at its default.
    BuildOptions common;
    common.flags = o.flags;
    for (auto& d : common.flags.include_dirs) d = fs::absolute(d).string();
    common.flags.include_dirs.push_back(include.string());
    if (xla) common.xla_include = xla->dir.string();
    common.arch = o.arch;
    common.cache_dir = or_fatal(resolve_cache_root(o.cache_dir, env)).string();
    common.nvcc = o.nvcc;
    common.nvcc_prefer = o.nvcc_prefer;
    common.brainevent_nvcc = o.brainevent_nvcc;
    common.python_sites = o.python_sites;
    common.cxx = o.cxx;
    common.launcher = o.launcher;
    common.remote_cache = o.remote_cache;
    common.remote_read_only = o.remote_read_only;
    common.force = o.force;
    common.no_cuda_graph = o.no_cuda_graph;
    common.json = true;
    common.verbose = o.verbose;
    common.quiet = !o.verbose;
    // Each child runs its first command in the slot the package started it
    // in, and every further one in a token of the shared jobserver.
    common.jobs = std::max(jobs, 1);
    std::vector<Command> out;
    for (const PackageModule& m : modules) {
        BuildOptions child = common;
        child.inputs = {m.source.string()};
        child.name = m.name;
        if (traces) child.trace = traces->file(out.size());
        add_load_flags(child.flags, m);
        Command c;
        c.argv = {self.string(), "build"};
        for (auto& arg : to_argv(child)) c.argv.push_back(std::move(arg));
        if (makeflags) c.env_overrides = {{"MAKEFLAGS", *makeflags}};
        c.description = m.source.filename().string() + " as " + m.name;
        c.inputs = {m.source.string()};
        out.push_back(std::move(c));
    }
    return out;
}

std::string package_defect(const fs::path& package, const fs::path& source,
                           const std::vector<fs::path>& include_dirs,
                           const std::string& compiler_output) {
    auto text = read_file(source);
    if (!text) return "";
    for (const auto& inc : find_includes(*text, source.string())) {
        if (inc.angled || inc.header.empty() ||
            compiler_output.find(inc.header) == std::string::npos)
            continue;
        std::error_code ec;
        bool found = fs::exists(source.parent_path() / inc.header, ec);
        for (const auto& dir : include_dirs) found = found || fs::exists(dir / inc.header, ec);
        if (found || ships_header(package, inc.header)) continue;
        return "the package's defect: it includes \"" + inc.header + "\" (line " +
               std::to_string(inc.where.line) +
               "), which the package does not ship, so the package's own loader cannot build "
               "it either";
    }
    return "";
}

namespace {

// What a module that did not build is: a failure; the package's own defect
// (it cannot build the file either), a warning unless --package-defects=error;
// or, for a file only checked, a note: the package may build it with what
// bekc cannot reproduce.
enum class Shortfall { Failure, Defect, Check };

// One list of modules that did not build: --json's objects, and "a.cu (why),
// b.cu (why)" for the last line.
struct Shortfalls {
    nlohmann::ordered_json modules = nlohmann::ordered_json::array();
    std::string files;
};

// What the children said: the modules built and those that did not, each
// reported on stderr as its kind says, with the child's output.
struct PackageOutcome {
    nlohmann::ordered_json built = nlohmann::ordered_json::array();
    Shortfalls failures, defects, checks;
    int hits = 0;
    Shortfalls& of(Shortfall kind) {
        return kind == Shortfall::Failure ? failures : kind == Shortfall::Defect ? defects : checks;
    }
};

// Why a module did not build, and whether that is the package's defect.
struct ModuleProblem {
    std::string why;  // empty when it built
    bool defect = false;
};

Shortfall shortfall_of(const BuildOptions& o, const PackageModule& m, const ModuleProblem& p) {
    if (p.defect) return o.package_defects == "error" ? Shortfall::Failure : Shortfall::Defect;
    return m.load_site.empty() ? Shortfall::Check : Shortfall::Failure;
}

// Module `m`, which did not build for `p.why`: reported and listed as its
// kind says.
void record_failure(const BuildOptions& o, const PackagePlan& plan, const PackageModule& m,
                    const ProcessResult& r, const ModuleProblem& p, PackageOutcome& out) {
    const std::string rel = m.source.lexically_relative(plan.root).generic_string();
    const Shortfall kind = shortfall_of(o, m, p);
    Shortfalls& list = out.of(kind);
    list.files += (list.files.empty() ? "" : ", ") + rel + " (" + p.why + ")";
    list.modules.push_back({{"source", m.source.string()}, {"name", m.name}, {"why", p.why}});
    const std::string output = child_messages(r);
    const std::string as = (m.load_site.empty() ? "only checked, as " : "as ") + m.name;
    if (kind == Shortfall::Failure) {
        std::fprintf(stderr, "bekc: error: %s (%s) failed: %s\n%s", rel.c_str(), as.c_str(),
                     p.why.c_str(), output.c_str());
        return;
    }
    if (o.quiet) return;
    std::fprintf(stderr, "bekc: %s: %s (%s) did not build: %s%s\n",
                 kind == Shortfall::Defect ? "warning" : "note", rel.c_str(), as.c_str(),
                 p.why.c_str(), o.verbose ? "" : " (-v shows the compiler's output)");
    if (o.verbose) std::fputs(output.c_str(), stderr);
}

// Why module `m` failed (an empty `why` when it built); `j`: the child's
// --json object.
ModuleProblem module_failure(const PackagePlan& plan, const PackageModule& m,
                             const ProcessResult& r, const std::vector<fs::path>& include_dirs,
                             nlohmann::json& j) {
    if (!r.ok()) {
        std::string why = package_defect(plan.root, m.source, include_dirs, r.output);
        if (!why.empty()) return {why, true};
        return {"it does not build (" + r.describe() + ")"};
    }
    j = child_json(r);
    if (!j.contains("manifest")) return {"bekc printed no manifest"};
    return {};
}

PackageOutcome collect_modules(const BuildOptions& o, const PackagePlan& plan,
                               const std::vector<ProcessResult>& results) {
    std::vector<fs::path> include_dirs;
    for (const auto& d : o.flags.include_dirs) include_dirs.push_back(fs::absolute(d));
    include_dirs.push_back(plan.root / "include");
    PackageOutcome out;
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        const PackageModule& m = plan.modules[i];
        nlohmann::json j;
        ModuleProblem problem = module_failure(plan, m, r, include_dirs, j);
        if (!problem.why.empty()) {
            record_failure(o, plan, m, r, problem, out);
            continue;
        }
        out.hits += j.value("cache_hit", false) ? 1 : 0;
        out.built.push_back(
            {{"source", m.source.string()},
             {"name", m.name},
             {"loaded_at", m.load_site.empty() ? nlohmann::json() : nlohmann::json(m.load_site)},
             {"only_checked", m.load_site.empty() ? nlohmann::json(m.why_check) : nlohmann::json()},
             {"manifest", j["manifest"]},
             {"key", j.value("key", "")},
             {"portable_key", j.value("portable_key", "")},
             {"cache_hit", j.value("cache_hit", false)}});
    }
    return out;
}

// The last line on stderr (unless -q), and on stdout the --json object or
// the manifests' paths.
void print_package_outcome(const BuildOptions& o, const PackagePlan& plan,
                           const PackageOutcome& out) {
    const size_t failed = out.failures.modules.size(), defects = out.defects.modules.size(),
                 checks = out.checks.modules.size();
    const size_t total = plan.modules.size();
    if (!o.quiet) {
        std::string line = "bekc: " + std::to_string(total - failed - defects - checks) + " of " +
                           std::to_string(total) + " modules built (" + std::to_string(out.hits) +
                           " cache hits)";
        if (failed) line += "; " + std::to_string(failed) + " failed: " + out.failures.files;
        if (defects)
            line += "; warning: " + std::to_string(defects) + (defects == 1 ? " file" : " files") +
                    " the package cannot build either: " + out.defects.files;
        if (checks)
            line += "; note: " + std::to_string(checks) + (checks == 1 ? " file" : " files") +
                    " only checked did not build: " + out.checks.files;
        std::fprintf(stderr, "%s\n", line.c_str());
    }
    if (o.json) {
        nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
        for (const auto& s : plan.skipped)
            skipped.push_back({{"source", s.source.string()}, {"why", s.reason}});
        nlohmann::ordered_json unread = nlohmann::ordered_json::array();
        for (const auto& u : plan.unread)
            unread.push_back({{"path", u.path.string()}, {"why", u.reason}});
        nlohmann::ordered_json j = {{"package", plan.root.string()},
                                    {"modules", out.built},
                                    {"failed", out.failures.modules},
                                    {"defects", out.defects.modules},
                                    {"check_failed", out.checks.modules},
                                    {"not_built", skipped},
                                    {"not_read", unread}};
        std::puts(dump_json(j).c_str());
    } else {
        for (const auto& m : out.built) std::puts(m["manifest"].get<std::string>().c_str());
    }
}

}  // namespace

int run_package_build(const BuildOptions& o, BuildContext& ctx) {
    const PackagePlan plan =
        traced(ctx.trace, "plan", [&] { return plan_package(o.inputs.front()); });
    const std::vector<PackageModule>& modules = plan.modules;
    if (plan.files == 0)
        fatal(Error::at(ErrorKind::Usage, o.inputs.front(), 0, "the package holds no kernel file"));
    // The plan, the same for --dry-run and the build.
    if (!o.quiet) {
        std::fprintf(stderr, "%s\n", plan.summary().c_str());
        for (const auto& note : plan.notes()) std::fprintf(stderr, "%s\n", note.c_str());
    }
    const fs::path cache_root = or_fatal(resolve_cache_root(o.cache_dir, ctx.env));
    // The modules share -j N (package/child_builds.hpp).
    const int jobs = jobs_wanted(o);
    ChildSlots slots = child_slots(jobs, o.verbose, o.dry_run, cache_root, ctx);
    // --trace: each module's child writes its own, merged into the package's.
    ChildTraces traces(o.dry_run ? nullptr : ctx.trace, private_dir_places(cache_root, ctx));
    std::vector<Command> planned =
        package_commands(o, modules, own_executable(), jobs, slots.makeflags(), ctx.env, &traces);
    // The modules that took longest last time start first, so the build does
    // not end waiting on one straggler; on a first build, the biggest sources
    // (package/child_builds.hpp, start_order).
    CompileTimes times(cache_root);
    std::vector<std::string> timing_names;
    for (const auto& m : modules)
        timing_names.push_back("package:" + m.source.string() + ":" + m.name);
    const std::vector<size_t> order = start_order(times, timing_names, planned);
    std::vector<Command> commands;  // in the order they start
    for (size_t i : order) commands.push_back(planned[i]);
    if (o.dry_run) {
        for (const auto& c : commands) std::printf("%s\n", display_command(c).c_str());
        return kExitOk;
    }
    std::vector<std::string> names;
    for (const auto& m : modules) names.push_back(m.name);
    std::vector<ProcessResult> results = traced(ctx.trace, "modules", [&] {
        return run_children(ctx.runner, commands, order, slots, o.quiet, &traces, names);
    });
    traces.merge(planned);
    remember_times(times, timing_names, results);
    PackageOutcome outcome = collect_modules(o, plan, results);
    print_package_outcome(o, plan, outcome);
    return outcome.failures.modules.empty() ? kExitOk : kExitSourceError;
}

}  // namespace bekc
