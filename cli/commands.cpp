#include "commands.hpp"

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "run/interrupt.hpp"
#include "util/error.hpp"
#include "util/version.hpp"

namespace bekc::cli {

namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 success; 1 the kernel source failed to scan or compile; 2 usage error; "
    "3 nvcc or the host compiler is missing or failed to run; 4 the cache could not be read or "
    "written, or standard output could not be written; 70 internal error.";

// Options whose empty value means something: `--remote-cache ""` turns off a
// remote cache set in the environment (docs/cache.md).
bool empty_value_allowed(const CLI::Option& opt) {
    for (const auto& l : opt.get_lnames())
        if (l == "remote-cache") return true;
    return false;
}

bool takes_value(const CLI::Option& opt) {
    return !opt.get_positional() && opt.get_items_expected_max() > 0;
}

// "-o/--output-dir", "-D", "--name"; a positional's name.
std::string shown_name(const CLI::Option& opt) {
    std::string out;
    for (const auto& s : opt.get_snames()) out += (out.empty() ? "-" : "/-") + s;
    for (const auto& l : opt.get_lnames()) out += (out.empty() ? "--" : "/--") + l;
    return out.empty() ? opt.get_name(true) : out;
}

// The option `arg` ("--name", "-D") names in `app` or the commands it falls
// through to, if it takes a value.
const CLI::Option* value_option(CLI::App* app, const std::string& arg) {
    for (; app; app = app->get_parent())
        if (const CLI::Option* opt = app->get_option_no_throw(arg); opt && takes_value(*opt))
            return opt;
    return nullptr;
}

// CLI11 reads `--name=` as `--name` and takes the next argument as its value,
// so `--name= --force` would name the module "--force". Before parsing, an
// empty value (`--name=`, `-D ''`) is refused (usage error), or, where an
// empty value means something, `--option=` is passed as `--option ''`.
// Returns the arguments to parse, argv[0] first.
std::vector<std::string> checked_args(CLI::App& app, int argc, char** argv) {
    std::vector<std::string> out(argv, argv + argc);
    CLI::App* current = &app;
    for (size_t i = 1; i < out.size(); ++i) {
        const std::string& arg = out[i];
        if (arg == "--") break;  // positionals only from here
        if (arg.rfind("--", 0) != 0 && (arg.size() != 2 || arg[0] != '-')) {
            // A positional: maybe the next subcommand.
            for (CLI::App* sub : current->get_subcommands({}))
                if (sub->check_name(arg)) {
                    current = sub;
                    break;
                }
            continue;
        }
        size_t eq = arg.find('=');
        const CLI::Option* opt = value_option(current, arg.substr(0, eq));
        if (!opt) continue;
        if (eq == std::string::npos) {
            // `--name VALUE`, `-D VALUE`: the value is not an option.
            if (++i < out.size() && out[i].empty() && !empty_value_allowed(*opt))
                throw FatalError("bekc: error: " + shown_name(*opt) + " needs a non-empty value",
                                 kExitUsage);
            continue;
        }
        if (eq + 1 != arg.size()) continue;  // --name=VALUE
        if (!empty_value_allowed(*opt))
            throw FatalError("bekc: error: " + shown_name(*opt) + " needs a non-empty value ('" +
                                 arg + "' gives none)",
                             kExitUsage);
        std::string name = arg.substr(0, eq);
        out[i] = "";
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), name);
        ++i;
    }
    return out;
}

// After parsing: any value still empty (an input or another positional, an
// option value the scan above did not see) is a usage error. Compilers would
// read a bare `-D` or `-I` as taking the next argument, and an empty name,
// path or flag is always a mistake.
void check_empty_values(CLI::App& app) {
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->get_items_expected_max() <= 0 || empty_value_allowed(*opt)) continue;
        for (const auto& value : opt->results()) {
            if (!value.empty()) continue;
            if (opt->get_positional())
                throw FatalError(
                    "bekc: error: the " + opt->get_name(true) + " argument is an empty string",
                    kExitUsage);
            throw FatalError("bekc: error: " + shown_name(*opt) + " needs a non-empty value",
                             kExitUsage);
        }
    }
    for (CLI::App* sub : app.get_subcommands({})) check_empty_values(*sub);
}

// Every command's result is on standard output: one that could not be written
// (a full disk, `>/dev/full`) is a failure, not a success.
int check_stdout(int code) {
    // stdout first: std::cout writes through it, and its own flush would
    // consume the error number.
    errno = 0;
    const bool flush_failed = std::fflush(stdout) != 0;
    int err = errno;
    std::cout.flush();
    if (!flush_failed && !std::ferror(stdout) && std::cout.good()) return code;
    if (!flush_failed || err == 0) err = EIO;
    std::fprintf(stderr, "bekc: error: cannot write standard output: %s\n", std::strerror(err));
    // A command that failed already keeps its own exit code.
    return code == kExitOk ? kExitCache : code;
}

int run_command(int argc, char** argv) {
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
    add(add_config_command);

    try {
        std::vector<std::string> args = checked_args(app, argc, argv);
        std::vector<const char*> pointers;
        for (const auto& a : args) pointers.push_back(a.c_str());
        try {
            app.parse(static_cast<int>(pointers.size()), pointers.data());
        } catch (const CLI::ParseError& e) {
            // CLI11 uses exit code 0 for --help/--version; everything else is a usage error.
            // Through stdio, whose errors check_stdout() reports (std::endl
            // would flush std::cout, and the error number with it).
            std::ostringstream out, err;
            int code = app.exit(e, out, err);
            std::fputs(out.str().c_str(), stdout);
            std::fputs(err.str().c_str(), stderr);
            return code == 0 ? 0 : kExitUsage;
        }
        check_empty_values(app);
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

}  // namespace

int run(int argc, char** argv) {
    // Ctrl-C, make's or Python's SIGTERM: stop the compilers, unwind (the
    // build directory removed, jobserver tokens returned), then die of the
    // same signal (run/interrupt.hpp).
    install_interrupt_handlers();
    int code = check_stdout(run_command(argc, argv));
    die_if_interrupted();
    return code;
}

}  // namespace bekc::cli
