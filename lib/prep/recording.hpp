// Recording the loads of a run (setting `record`: $BEKC_RECORD, or
// `record = FILE` in bekc.conf). Each build that delivered a library, a hit
// or a miss, from the binary or the in-process lookup, appends one line of
// JSON to FILE:
//
//     {"cwd": "/abs/dir", "args": ["k.cu", "--name=k", "-I/abs/dir/inc"], "bekc": "0.1.0"}
//
// `args` are the arguments after `bekc build` that build the same module
// (prep/build_args.hpp: to_argv), with the include directories,
// --functions and --xla-include made absolute (the inputs stay as spelt:
// their spelling is part of the key) and without the options about this process rather than the
// module (the caches, the outputs, the output format, -j, --force).
// `bekc replay FILE` (package/replay.hpp) builds each distinct line once.
// See docs/cli.md, "Configuration", and docs/prebuilding.md.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "prep/build_context.hpp"
#include "prep/build_options.hpp"
#include "prep/reporter.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

// `o` as a replay rebuilds it: only what chooses the module, with the include
// directories, --functions and --xla-include absolute against `cwd`.
BuildOptions recorded_options(const BuildOptions& o, const fs::path& cwd);

// The line recorded for `o` built in `cwd`, '\n' included.
std::string recorded_line(const BuildOptions& o, const fs::path& cwd);

// Appends `line` to `path` in one write(2), under an flock, so that lines
// of processes appending at once never interleave. Never follows a
// symbolic link at `path`, and refuses anything but a regular file
// (without waiting on a FIFO); creates it 0644 when missing.
std::expected<void, Error> append_record(const fs::path& path, std::string_view line);

// After a build delivered its library: appends its line when the setting
// `record` (read through `ctx.env`) names a file; relative to `ctx.cwd`.
// A line that cannot be written is a warning through `report`.
void record_request(const BuildOptions& o, const BuildContext& ctx, const Reporter& report);

}  // namespace bekc
