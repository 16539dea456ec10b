#include "commands.hpp"

#include <cstdio>
#include <iostream>
#include <vector>

#include "util/error.hpp"
#include "util/version.hpp"

namespace bekc::cli {

namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 success; 1 the kernel source failed to scan or compile; 2 usage error; "
    "3 nvcc or the host compiler is missing or failed to run; 4 the cache could not be read or "
    "written; 70 internal error.";

}  // namespace

int run(int argc, char** argv) {
    CLI::App app{"bekc: compile annotated CUDA and C++ kernels into JAX custom calls"};
    app.footer(kExitCodes);
    app.set_version_flag("--version", std::string("bekc ") + kVersion);
    app.require_subcommand(1);

    std::vector<std::pair<CLI::App*, Action>> actions;
    auto add = [&](Action (*adder)(CLI::App&)) {
        size_t before = app.get_subcommands({}).size();
        Action a = adder(app);
        actions.emplace_back(app.get_subcommands({})[before], std::move(a));
    };
    add(add_build_command);
    add(add_inspect_command);
    add(add_cache_command);
    add(add_doctor_command);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // CLI11 uses exit code 0 for --help/--version; everything else is a usage error.
        int code = app.exit(e);
        return code == 0 ? 0 : kExitUsage;
    }
    try {
        for (auto& [sub, action] : actions)
            if (sub->parsed()) return action();
    } catch (const FatalError& e) {
        // An empty message means the diagnostics were printed already.
        if (*e.what()) {
            std::fputs(e.what(), stderr);
            std::fputc('\n', stderr);
        }
        return e.exit_code();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bekc: internal error: %s\n", e.what());
        return kExitInternal;
    }
    return kExitUsage;
}

}  // namespace bekc::cli
