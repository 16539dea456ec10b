// A planned process: what the build wants to run, as a plain value. Planning
// code builds these; only run/process.cpp turns them into processes, so a
// dry run, `-v` output and tests can all look at the same plan.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace bekc {

struct Command {
    // argv[0] is the program: an absolute path, or a bare name looked up in
    // bekc's own PATH (not in env_overrides). Arguments go to the program
    // byte for byte; no shell ever sees them.
    std::vector<std::string> argv;
    // One line for progress output ("compile kernels.cu").
    std::string description;
    // Files the command reads and writes, for the plan and for fake runners.
    std::vector<std::string> inputs, outputs;
    // Working directory; empty means bekc's own.
    std::string cwd;
    // Variables set (or replaced) on top of bekc's environment.
    std::vector<std::pair<std::string, std::string>> env_overrides;
    // How many of the -j slots the command takes while it runs: 1, or N for
    // `nvcc --threads N`, which compiles N architectures side by side.
    int slots = 1;
};

// The command as a line a user can paste into a POSIX shell: `cd DIR &&`,
// then `NAME=value` assignments, then the arguments, each quoted only where
// the shell would otherwise change it. For --dry-run and -v output only;
// never used to run anything.
std::string display_command(const Command& command);

// One word quoted for a POSIX shell ('it'\''s' style when needed).
std::string shell_quote(const std::string& word);

}  // namespace bekc
