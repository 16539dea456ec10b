// `bekc replay RECORDING...`: builds each distinct load a run recorded
// (prep/recording.hpp) once, each as its own child `bekc build` in the
// directory it was recorded in, side by side under -j N as the package
// prebuild's modules are (package/child_builds.hpp). Identical requests (the
// same cwd and arguments) are built once, in the order first seen. See
// docs/cli.md, "bekc replay", and docs/prebuilding.md.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "prep/build_context.hpp"
#include "prep/build_options.hpp"
#include "util/fs.hpp"

namespace bekc {

struct ReplayOptions {
    std::vector<std::string> recordings;
    std::optional<std::string> arch;       // replaces each load's recorded --arch
    std::optional<std::string> cache_dir;  // added to each load
    int jobs = 0;                          // 0: one per core
    bool json = false, keep_going = false, verbose = false, quiet = false;
    std::optional<std::string> trace;  // --trace FILE (cli/trace_file.hpp writes it)
};

// One recorded request.
struct RecordedLoad {
    fs::path cwd;
    std::vector<std::string> args;  // after `bekc build`
    BuildOptions options;           // what `args` parse to
    std::string where;              // "FILE:LINE" where it was first seen
};

// The requests of one recording's text, in order; blank lines are skipped.
// Each bad line (not JSON, not an object, no absolute "cwd", no "args" list of
// strings, arguments `bekc build` does not take) is one
// "FILE:LINE: error: ..." in `errors`. Pure: the directories are not looked at.
std::vector<RecordedLoad> parse_recording(std::string_view text, const std::string& file,
                                          std::vector<std::string>& errors);

// `loads` without the repeats of a cwd and arguments seen before.
std::vector<RecordedLoad> distinct_loads(std::vector<RecordedLoad> loads);

// The arguments after `bekc build` that replay `load`: --arch replaced and
// --cache-dir added when `o` names them, and the child's --json, -q and -j,
// and --trace `trace` when given.
std::vector<std::string> replay_args(const RecordedLoad& load, const ReplayOptions& o, int jobs,
                                     const std::optional<std::string>& trace = std::nullopt);

// Runs the whole replay; returns the exit code: 0, 1 when a load failed to
// build, 2 (nothing built without --keep-going) when a line is bad.
int run_replay(const ReplayOptions& options, BuildContext& context);

}  // namespace bekc
