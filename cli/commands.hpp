// The command-line front end: CLI11 wiring only. Each command's work is in lib/.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace bekc::cli {

// A subcommand's action; returns the exit code.
using Action = std::function<int()>;

// Each adds its subcommand to `app` and returns the action to run when it is chosen.
Action add_inspect_command(CLI::App& app);
Action add_build_command(CLI::App& app);
Action add_cache_command(CLI::App& app);
Action add_doctor_command(CLI::App& app);

int run(int argc, char** argv);

}  // namespace bekc::cli
