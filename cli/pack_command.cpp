// `bekc pack`: prebuilt kernels as a read-only cache for machines that never
// compile them (lib/package/pack.hpp; docs/packs.md).
#include <cstdio>
#include <memory>

#include "commands.hpp"
#include "package/pack.hpp"
#include "run/runner.hpp"
#include "trace_file.hpp"

namespace bekc::cli {

Action add_pack_command(CLI::App& app) {
    auto o = std::make_shared<PackOptions>();
    CLI::App* cmd = app.add_subcommand(
        "pack",
        "Build the modules of packages, recordings of loads or caches for a list of "
        "architectures into a pack: a read-only cache that serves them with no compiler");
    cmd->add_option("sources", o->sources,
                    "Package directories (as `bekc build <package>`), recordings of loads "
                    "(BEKC_RECORD, `bekc replay`) and bekc caches")
        ->required();
    cmd->add_option("-o,--output", o->output, "The pack's directory (it must not exist)")
        ->required();
    cmd->add_option("--format", o->format, "dir (more formats: docs/packs.md)");
    cmd->add_option("--arch", o->arch,
                    "Architectures, as bekc build's --arch; default: every one nvcc lists that "
                    "JAX supports, plus PTX of the newest");
    cmd->add_option("--name", o->name,
                    "The pack's name (default: -o's file name, '_' for what a name cannot hold)");
    cmd->add_option("--version", o->version, "The pack's version (default: 0)");
    cmd->add_option("--cache-dir", o->cache_dir, "The cache the modules are built into");
    cmd->add_option("-j,--jobs", o->jobs, "Parallel compiles (default: one per core)");
    cmd->add_flag("--json", o->json, "Print the pack's path and description as JSON");
    cmd->add_flag("-q,--quiet", o->quiet, "Only errors");
    cmd->add_flag("-v,--verbose", o->verbose, "Show the builds' output");
    return traced_command(*cmd, o->trace, "each source's build in a lane, and its modules' own",
                          [o](TraceFile& trace) {
                              Settings settings = load_settings_or_exit(o->cache_dir, o->quiet);
                              PackOptions options = *o;
                              if (options.name.empty())
                                  options.name = default_pack_name(options.output);
                              return trace.run(o->trace, "pack " + options.name, [&](Trace* t) {
                                  ProcessRunner runner;
                                  BuildContext context = context_with(runner, settings.lookup());
                                  context.trace = t;
                                  return run_pack(options, context);
                              });
                          });
}

}  // namespace bekc::cli
