// The command-line front end: CLI11 wiring only. Each command's work is in lib/.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "config/settings.hpp"
#include "util/error.hpp"

namespace bekc::cli {

// A subcommand's action: `run` returns the exit code. When it fails on the
// fatal path, main() catches the FatalError (the one place that does) and
// hands its Error to `on_failure`, if set, before printing it: the command
// may record the failure or add a note.
struct Action {
    std::function<int()> run;
    std::function<void(Error&)> on_failure;

    template <class F>
    requires std::is_invocable_r_v<int, F> Action(F run_,
                                                  std::function<void(Error&)> on_failure_ = {})
        : run(std::move(run_)), on_failure(std::move(on_failure_)) {}
};

// Each adds its subcommand to `app` and returns the action to run when it is chosen.
Action add_inspect_command(CLI::App& app);
Action add_build_command(CLI::App& app);
Action add_cache_command(CLI::App& app);
Action add_doctor_command(CLI::App& app);
Action add_config_command(CLI::App& app);
Action add_pack_command(CLI::App& app);
Action add_replay_command(CLI::App& app);
// `bekc completion SHELL` and `bekc man`: written from `app`'s own
// definitions, every command and option (cli_docs.cpp).
Action add_completion_command(CLI::App& app);
Action add_man_command(CLI::App& app);

// The commit bekc was built from, "unknown" when not built from a git
// checkout (cmake/build_info.cmake writes it).
extern const char* const kBuildCommit;

// What `bekc --version` prints: bekc's version, the commit it was built
// from, and the nvcc and host compiler a build would use, or "not found".
std::string version_text();

// The settings (config/settings.hpp) for a command given `cache_dir_flag`
// (--cache-dir); a bad bekc.conf prints its errors and exits 2. The
// warnings of settings a file may not set are printed unless `quiet`.
Settings load_settings_or_exit(const std::optional<std::string>& cache_dir_flag,
                               bool quiet = false);

int run(int argc, char** argv);

}  // namespace bekc::cli
