#include "warm/warm_lookup.hpp"

#include "config/settings.hpp"
#include "driver/build.hpp"
#include "driver/build_report.hpp"
#include "package/package_build.hpp"
#include "prep/build_args.hpp"
#include "prep/reporter.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// A hit that would have to start a process (a tool not yet asked its
// version, GPUs not yet detected) or write a generated file: the binary's
// work, not a warm hit's.
struct WouldRun {};

class RefusingRunner final : public Runner {
  public:
    std::expected<void, Error> write_file(const fs::path&, std::string_view) override {
        throw WouldRun{};
    }
    std::vector<ProcessResult> run(const std::vector<Command>&, int, const ProgressCallback&,
                                   const ParallelOptions&) override {
        throw WouldRun{};
    }
};

// Arguments that the binary's command line reads as this parse does: `build`
// first; no empty value and no `--option=` (cli/commands.cpp refuses or
// rewrites those before parsing).
bool plain_arguments(const std::vector<std::string>& args) {
    if (args.size() < 3 || args[1] != "build") return false;
    for (size_t i = 1; i < args.size(); ++i)
        if (args[i].empty() || args[i].back() == '=') return false;
    return true;
}

// Options whose output is the --json line and the hit's warnings only, and
// absolute inputs (a relative one could also be a command's name).
bool answerable(const BuildOptions& o) {
    if (!o.json || o.verbose || o.explain_key || o.dry_run || o.force || o.compile_commands)
        return false;
    for (const auto& input : o.inputs)
        if (!fs::path(input).is_absolute()) return false;
    return !is_kernel_package(o);
}

}  // namespace

std::optional<WarmHit> warm_lookup(const std::vector<std::string>& args) {
    if (!plain_arguments(args)) return std::nullopt;
    // --help included: the binary prints it.
    auto o = parse_build_args({args.begin() + 2, args.end()});
    if (!o || !answerable(*o)) return std::nullopt;
    auto settings = load_settings(o->cache_dir, system_env());
    if (!settings) return std::nullopt;
    WarmHit hit;
    if (!o->quiet)
        for (const auto& w : settings->warnings()) hit.messages += w + "\n";
    EnvLookup env = settings->lookup();
    RefusingRunner runner;
    BuildContext context = context_with(runner, env);
    Reporter report(*o, &hit.messages);
    std::optional<BuildResult> r;
    try {
        r = run_build_if_cached(*o, context, report);
    } catch (const WouldRun&) {
        return std::nullopt;
    }
    if (!r) return std::nullopt;
    hit.json = dump_json(report_build(*o, *r, env, report));
    return hit;
}

}  // namespace bekc
