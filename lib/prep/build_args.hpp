// `bekc build`'s command line in both directions: the CLI11 definition of
// every option (which the CLI parses with) and `to_argv`, which writes a
// BuildOptions value back as the arguments that parse to it. The package
// prebuild writes its child builds through `to_argv`, so a new option is
// defined here once, and tests/unit/test_build_args.cpp checks that
// parsing `to_argv(o)` gives `o` back.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "prep/build_options.hpp"

namespace CLI {
class App;
}

namespace bekc {

// Adds the inputs and every option of `bekc build` to `cmd`, filling `o`.
void add_build_options(CLI::App& cmd, BuildOptions& o);

// The arguments after `bekc build` that parse to `o`: the inputs, then each
// option that differs from its default, values joined as `--option=VALUE`
// (or `-IDIR`), so a value that starts with '-' is never read as an option.
// Inputs that start with '-' come last, after `--`. An empty value is written
// only for --remote-cache, the one option that takes one (as two arguments,
// `--remote-cache ""`).
std::vector<std::string> to_argv(const BuildOptions& o);

// The options that decide which library a build makes: `o` less where it
// looks and writes (caches, -o, --depfile), which tools it runs and how
// (--nvcc, --cxx, --launcher, -j, --xla-include, whose headers are checked
// by their bytes), and what it prints. A portable key (graph/keys.hpp) and
// a recording of the loads (prep/recording.hpp) keep these.
BuildOptions library_options(const BuildOptions& o);

// What `bekc build ARGS` parses `args` (the arguments after `build`) to, or
// CLI11's message (--help included). Only the option definitions: the
// binary's checks of empty values come after (cli/commands.cpp).
std::expected<BuildOptions, std::string> parse_build_args(const std::vector<std::string>& args);

}  // namespace bekc
