#include "commands.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "driver/fatal.hpp"
#include "json_output.hpp"
#include "run/interrupt.hpp"
#include "scan/arg_spec.hpp"
#include "util/error.hpp"
#include "util/exit_codes.hpp"
#include "util/version.hpp"

namespace bekc::cli {

namespace {

// "Exit codes: 0 success; 1 ...; 70 internal error.", from util/exit_codes.hpp.
std::string exit_codes_footer() {
    std::string out = "Exit codes: 0 success";
    for (const ExitCodeRow& row : kExitCodeRows)
        out += "; " + std::to_string(row.code) + " " + std::string(row.meaning);
    return out + ".";
}

// Options whose empty value means something: `--remote-cache ""` turns off a
// remote cache set in the environment, `--read-only-caches ""` the
// read-only caches (docs/cache.md).
bool empty_value_allowed(const CLI::Option& opt) {
    for (const auto& l : opt.get_lnames())
        if (l == "remote-cache" || l == "read-only-caches") return true;
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
                fatal(Error::make(ErrorKind::Usage, shown_name(*opt) + " needs a non-empty value"));
            continue;
        }
        if (eq + 1 != arg.size()) continue;  // --name=VALUE
        if (!empty_value_allowed(*opt))
            fatal(Error::make(ErrorKind::Usage, shown_name(*opt) + " needs a non-empty value ('" +
                                                    arg + "' gives none)"));
        std::string name = arg.substr(0, eq);
        out[i] = "";
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), name);
        ++i;
    }
    return out;
}

// "bekc", "bekc build", "bekc cache ls".
std::string command_path(const CLI::App* app) {
    std::string out;
    for (; app && app->get_parent(); app = app->get_parent()) {
        out.insert(0, app->get_name());
        out.insert(0, 1, ' ');
    }
    return "bekc" + out;
}

// "build, inspect, cache, doctor and config".
std::string listed(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
        out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return out;
}

std::vector<std::string> subcommand_names(CLI::App* app) {
    std::vector<std::string> out;
    for (CLI::App* sub : app->get_subcommands({})) out.push_back(sub->get_name());
    return out;
}

// Every option spelling `app` and the commands it falls through to take.
std::vector<std::string> option_spellings(CLI::App* app) {
    std::vector<std::string> out;
    for (; app; app = app->get_parent())
        for (const CLI::Option* opt : app->get_options()) {
            for (const auto& l : opt->get_lnames()) out.push_back("--" + l);
            for (const auto& s : opt->get_snames()) out.push_back("-" + s);
        }
    return out;
}

// Whether `arg` ("--fast-math", "--name=x", "-O3", "-v") is an option of
// `app` or the commands it falls through to; `value` says whether it takes
// the next argument as its value.
bool known_option(CLI::App* app, const std::string& arg, bool& value) {
    value = false;
    bool is_long = arg.rfind("--", 0) == 0;
    std::string name = is_long ? arg.substr(0, arg.find('=')) : arg.substr(0, 2);
    for (CLI::App* a = app; a; a = a->get_parent())
        if (const CLI::Option* opt = a->get_option_no_throw(name)) {
            bool attached = is_long ? arg.find('=') != std::string::npos : arg.size() > 2;
            value = takes_value(*opt) && !attached;
            return true;
        }
    return false;
}

// The option a mistyped `arg` most likely meant. First the look-alikes of a
// short option: the digit 0 for the letter O before the value, O for 0 in
// it, a dash too many ("-03", "--03", "-0O" and "--O3" for -O3, -O0; "-0"
// for -O); then the nearest spelling (nearest_word: "--fastmath").
std::optional<std::string> suggest_option(CLI::App* app, const std::string& arg) {
    size_t dashes = std::min(arg.find_first_not_of('-'), arg.size());
    std::string rest = arg.substr(dashes);
    if (!rest.empty() && rest.size() <= 3 && dashes <= 2) {
        std::string fixed = "-";
        for (size_t i = 0; i < rest.size(); ++i) {
            char c = rest[i];
            fixed += i == 0 ? (c == '0' ? 'O' : c) : (c == 'O' || c == 'o' ? '0' : c);
        }
        bool value = false;
        if (fixed != arg && known_option(app, fixed, value)) return fixed;
    }
    return nearest_word(arg.substr(0, arg.find('=')), option_spellings(app));
}

// "unknown option '--fastmath'; did you mean --fast-math?", and where to look.
std::string unknown_option(CLI::App* app, const std::string& arg) {
    std::string name = arg.substr(0, arg.find('='));
    auto close = suggest_option(app, arg);
    return "unknown option '" + name + "'" + (close ? "; did you mean " + *close + "?" : "") +
           "\nRun '" + command_path(app) + " --help' for its options.";
}

// What a parse error means, in bekc's words, for the mistakes people make: an
// unknown command or option (with the nearest one), a command without its
// inputs. Empty: CLI11's own message is as good.
std::string usage_error(CLI::App& app, const std::vector<std::string>& args) {
    CLI::App* current = &app;
    bool command_given = false;
    for (size_t i = 1; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--") break;
        if (arg.size() > 1 && arg[0] == '-') {
            bool value = false;
            if (arg == "-h" || arg == "--help" || arg == "--version") return {};
            if (!known_option(current, arg, value)) return unknown_option(current, arg);
            if (value) ++i;
            continue;
        }
        std::vector<std::string> subs = subcommand_names(current);
        if (subs.empty()) continue;  // an input
        CLI::App* sub = nullptr;
        for (CLI::App* s : current->get_subcommands({}))
            if (s->check_name(arg)) sub = s;
        if (!sub) {
            auto close = nearest_word(arg, subs);
            return "unknown command '" + command_path(current) + " " + arg + "'" +
                   (close ? "; did you mean '" + command_path(current) + " " + *close + "'?" : "") +
                   "\nThe commands of " + command_path(current) + " are " + listed(subs) + ".";
        }
        current = sub;
        command_given = true;
    }
    if (!current->get_subcommands({}).empty())
        return command_path(current) + " needs a command\nThe commands of " +
               command_path(current) + " are " + listed(subcommand_names(current)) + "; run '" +
               command_path(current) + " --help' for what each does.";
    if (command_given && current->get_name() == "build" &&
        current->get_option("inputs")->count() == 0)
        return "bekc build needs at least one input\n"
               "usage: bekc build [OPTIONS] INPUT...\n"
               "example: bekc build kernels.cu -O3 --fast-math\n"
               "Run 'bekc build --help' for its options.";
    return {};
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
                fatal(Error::make(ErrorKind::Usage,
                                  "the " + opt->get_name(true) + " argument is an empty string"));
            fatal(Error::make(ErrorKind::Usage, shown_name(*opt) + " needs a non-empty value"));
        }
    }
    for (CLI::App* sub : app.get_subcommands({})) check_empty_values(*sub);
}

// After parsing: CLI11 takes an argument that reads as a negative number
// ("-03", "-0") as a positional, an input. One that names no file but looks
// like a mistyped option of its command is that mistake (usage error); one
// that names a file stays an input.
void check_option_like_positionals(CLI::App& app) {
    for (const CLI::Option* opt : app.get_options()) {
        if (!opt->get_positional()) continue;
        for (const auto& value : opt->results()) {
            std::error_code ec;
            namespace fs = std::filesystem;
            if (value.size() < 2 || value[0] != '-' ||
                fs::symlink_status(value, ec).type() != fs::file_type::not_found)
                continue;
            if (suggest_option(&app, value))
                fatal(Error::make(ErrorKind::Usage, unknown_option(&app, value)));
        }
    }
    for (CLI::App* sub : app.get_subcommands({}))
        if (sub->parsed()) check_option_like_positionals(*sub);
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

using Actions = std::vector<std::pair<CLI::App*, Action>>;

// The app and every command's action.
void add_commands(CLI::App& app, Actions& actions) {
    app.footer(exit_codes_footer());
    app.set_version_flag("--version", version_text);
    app.require_subcommand(1);
    auto add = [&](Action (*adder)(CLI::App&)) {
        size_t before = app.get_subcommands({}).size();
        Action a = adder(app);
        actions.emplace_back(app.get_subcommands({})[before], std::move(a));
    };
    for (auto adder : {add_build_command, add_inspect_command, add_cache_command,
                       add_doctor_command, add_config_command, add_replay_command, add_pack_command,
                       add_completion_command, add_man_command})
        add(adder);
}

// A failure's end: the command's own handling (`on_failure`), the Error on
// standard error (an empty message: its diagnostics were printed already)
// and, with --json, the failure's object on standard output. Returns the
// exit code.
int failed(Error error, Actions& actions, const StderrCopy* json) {
    for (auto& [sub, action] : actions)
        if (sub->parsed() && action.on_failure) action.on_failure(error);
    if (std::string shown = error.render(); !shown.empty()) {
        std::fputs(shown.c_str(), stderr);
        std::fputc('\n', stderr);
    }
    if (json) print_failure_json(error, json->text());
    return error.exit_code();
}

// A bug in bekc: `line` on standard error and, with --json, its object.
int internal_failure(const std::string& line, const StderrCopy* json) {
    std::fprintf(stderr, "%s\n", line.c_str());
    if (json) print_failure_json(Error::make(ErrorKind::Internal, line), json->text());
    return kExitInternal;
}

// CLI11's --help and --version (exit 0), and the parse errors bekc has no
// words of its own for, printed as CLI11 prints them. Through stdio, whose
// errors check_stdout() reports (std::endl would flush std::cout, and the
// error number with it).
int parse_stopped(CLI::App& app, const CLI::ParseError& e, const StderrCopy* json) {
    std::ostringstream out, err;
    int code = app.exit(e, out, err);
    std::fputs(out.str().c_str(), stdout);
    std::fputs(err.str().c_str(), stderr);
    if (code == 0) return kExitOk;
    if (json) print_failure_json(Error::make(ErrorKind::Usage, e.what()), json->text());
    return kExitUsage;
}

int run_command(int argc, char** argv, const StderrCopy* json) {
    CLI::App app{"bekc: compile annotated CUDA and C++ kernels into JAX custom calls"};
    Actions actions;
    add_commands(app, actions);
    try {
        std::vector<std::string> args = checked_args(app, argc, argv);
        std::vector<const char*> pointers;
        for (const auto& a : args) pointers.push_back(a.c_str());
        try {
            app.parse(static_cast<int>(pointers.size()), pointers.data());
        } catch (const CLI::ParseError& e) {
            if (e.get_exit_code() != 0)
                if (std::string why = usage_error(app, args); !why.empty())
                    fatal(Error::make(ErrorKind::Usage, why));
            return parse_stopped(app, e, json);
        }
        check_empty_values(app);
        check_option_like_positionals(app);
        for (auto& [sub, action] : actions)
            if (sub->parsed()) return action.run();
    } catch (const FatalError& caught) {
        return failed(caught.error(), actions, json);
    } catch (const InternalError& e) {
        return internal_failure(e.what(), json);
    } catch (const std::exception& e) {
        return internal_failure(std::string("bekc: internal error: ") + e.what(), json);
    }
    return kExitUsage;
}

}  // namespace

int run(int argc, char** argv) {
    // Ctrl-C, make's or Python's SIGTERM: stop the compilers, unwind (the
    // build directory removed, jobserver tokens returned), then die of the
    // same signal (run/interrupt.hpp).
    install_interrupt_handlers();
    std::optional<StderrCopy> json;
    if (json_requested(argc, argv)) json.emplace();
    int code = run_command(argc, argv, json ? &*json : nullptr);
    json.reset();
    code = check_stdout(code);
    die_if_interrupted();
    return code;
}

}  // namespace bekc::cli
