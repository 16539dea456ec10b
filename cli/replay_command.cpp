#include <memory>

#include "commands.hpp"
#include "driver/build.hpp"
#include "package/replay.hpp"
#include "trace_file.hpp"

namespace bekc::cli {

Action add_replay_command(CLI::App& app) {
    auto o = std::make_shared<ReplayOptions>();
    CLI::App* cmd = app.add_subcommand(
        "replay",
        "Build each distinct load a run recorded ($BEKC_RECORD, or record in bekc.conf) once, "
        "in the directory it ran in, so that the same run finds every load in the cache");
    cmd->add_option("recordings", o->recordings, "Files $BEKC_RECORD wrote")->required();
    cmd->add_option("--arch", o->arch,
                    "GPU architectures for every load, replacing the recorded --arch (a list, "
                    "'native' or 'auto', as bekc build takes)");
    cmd->add_option("--cache-dir", o->cache_dir, "Build into this cache");
    cmd->add_option("-j,--jobs", o->jobs,
                    "Parallel compiles, shared by the loads' builds (default: one per core)");
    cmd->add_flag("--json", o->json, "Print one JSON object summarising the loads");
    cmd->add_flag("--keep-going", o->keep_going,
                  "Build the good lines of a recording with bad ones (exit 2 still)");
    cmd->add_flag("-v,--verbose", o->verbose, "Print every command and full compiler output");
    cmd->add_flag("-q,--quiet", o->quiet, "Print no progress and no summary");
    return traced_command(*cmd, o->trace,
                          "each load's build in a lane, and a process per load with its steps",
                          [o](TraceFile& trace) {
                              Settings settings = load_settings_or_exit(o->cache_dir, o->quiet);
                              return trace.run(o->trace, "replay", [&](Trace* t) {
                                  ProcessRunner runner;
                                  BuildContext context = context_with(runner, settings.lookup());
                                  context.trace = t;
                                  return run_replay(*o, context);
                              });
                          });
}

}  // namespace bekc::cli
