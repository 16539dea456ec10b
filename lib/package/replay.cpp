#include "package/replay.hpp"

#include <cstdio>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "driver/fatal.hpp"
#include "package/child_builds.hpp"
#include "prep/build_args.hpp"
#include "store/layout.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// One line's request, or why it is not one.
std::expected<RecordedLoad, std::string> parse_line(std::string_view line) {
    auto j = parse_json(line);
    if (!j) return std::unexpected("not JSON (" + j.error() + ")");
    if (!j->is_object()) return std::unexpected("not a JSON object");
    auto cwd = j->find("cwd");
    if (cwd == j->end() || !cwd->is_string() || !fs::path(cwd->get<std::string>()).is_absolute())
        return std::unexpected("no \"cwd\", the absolute directory the load ran in");
    auto args = j->find("args");
    bool strings = args != j->end() && args->is_array();
    if (strings)
        for (const auto& a : *args) strings = strings && a.is_string();
    if (!strings)
        return std::unexpected(
            "no \"args\", the list of the load's arguments after `bekc build` (strings)");
    RecordedLoad load;
    load.cwd = fs::path(cwd->get<std::string>()).lexically_normal();
    load.args = args->get<std::vector<std::string>>();
    auto parsed = parse_build_args(load.args);
    if (!parsed) return std::unexpected("\"args\" are not `bekc build`'s: " + parsed.error());
    load.options = std::move(*parsed);
    return load;
}

std::string module_of(const RecordedLoad& load) {
    if (!load.options.name.empty()) return load.options.name;
    return load.options.inputs.empty() ? "" : fs::path(load.options.inputs.front()).stem().string();
}

// The requests of every recording, with each bad line (and each directory
// that is gone) in `errors`.
std::vector<RecordedLoad> read_recordings(const ReplayOptions& o,
                                          std::vector<std::string>& errors) {
    std::vector<RecordedLoad> loads;
    for (const auto& file : o.recordings) {
        auto text = read_file(file);
        if (!text) {
            errors.push_back("bekc: error: " + text.error().message);
            continue;
        }
        for (auto& load : parse_recording(*text, file, errors)) {
            std::error_code ec;
            if (fs::is_directory(load.cwd, ec))
                loads.push_back(std::move(load));
            else
                errors.push_back(load.where + ": error: the directory the load ran in, " +
                                 load.cwd.string() + ", does not exist");
        }
    }
    return loads;
}

// What a load's child said: its --json object, or why it did not build.
struct LoadOutcome {
    nlohmann::json child;
    std::string why;  // empty when it built
};

LoadOutcome outcome_of(const RecordedLoad& load, const ProcessResult& r) {
    LoadOutcome out{child_json(r), ""};
    if (!r.ok())
        out.why = r.describe();
    else if (!out.child.contains("manifest"))
        out.why = "bekc printed no manifest";
    if (!out.why.empty()) {
        const std::string output = child_messages(r);
        std::fprintf(stderr, "bekc: error: %s (%s, in %s) failed: %s\n%s", module_of(load).c_str(),
                     load.where.c_str(), load.cwd.c_str(), out.why.c_str(), output.c_str());
    }
    return out;
}

// --json's object for one load: the entry's key and its portable key, which
// `bekc pack` reads, as the child's --json gave them.
nlohmann::ordered_json load_json(const RecordedLoad& load, const LoadOutcome& out) {
    nlohmann::ordered_json j = {{"module", module_of(load)},
                                {"cwd", load.cwd.string()},
                                {"recorded_at", load.where},
                                {"ok", out.why.empty()}};
    if (!out.why.empty()) {
        j["why"] = out.why;
        return j;
    }
    const std::string manifest = out.child["manifest"].get<std::string>();
    j["manifest"] = manifest;
    j["cache_hit"] = out.child.value("cache_hit", false);
    j["key"] = out.child.value("key", "");
    j["portable_key"] = out.child.value("portable_key", "");
    return j;
}

// The last line on stderr (unless -q), and on stdout the --json object or
// the manifests' paths. Returns whether every load built.
bool print_replay(const ReplayOptions& o, const std::vector<RecordedLoad>& loads,
                  const std::vector<LoadOutcome>& outcomes, size_t bad_lines) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    std::string failed;
    size_t failures = 0, hits = 0;
    for (size_t i = 0; i < loads.size(); ++i) {
        list.push_back(load_json(loads[i], outcomes[i]));
        hits += list.back().value("cache_hit", false) ? 1 : 0;
        if (outcomes[i].why.empty()) continue;
        ++failures;
        failed += (failed.empty() ? "" : ", ") + module_of(loads[i]) + " (" + loads[i].where +
                  ": " + outcomes[i].why + ")";
    }
    if (!o.quiet) {
        std::string line = "bekc: " + std::to_string(loads.size() - failures) + " of " +
                           std::to_string(loads.size()) + " recorded loads built (" +
                           std::to_string(hits) + " cache hits)";
        if (failures) line += "; " + std::to_string(failures) + " failed: " + failed;
        if (bad_lines) line += "; " + std::to_string(bad_lines) + " bad lines or files skipped";
        std::fprintf(stderr, "%s\n", line.c_str());
    }
    if (o.json) {
        nlohmann::ordered_json j = {{"recordings", o.recordings},
                                    {"loads", list},
                                    {"built", loads.size() - failures},
                                    {"failed", failures},
                                    {"bad_lines", bad_lines}};
        std::puts(dump_json(j).c_str());
    } else {
        for (const auto& l : list)
            if (l["ok"].get<bool>()) std::puts(l["manifest"].get<std::string>().c_str());
    }
    return failures == 0;
}

// Bad lines: each on stderr; without --keep-going the replay ends here.
void report_bad_lines(const ReplayOptions& o, const std::vector<std::string>& errors) {
    if (errors.empty()) return;
    for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.c_str());
    const std::string how =
        "each line is {\"cwd\": DIR, \"args\": [ARG, ...]} as $BEKC_RECORD writes it: fix or "
        "remove the lines named";
    if (o.keep_going) {
        if (!o.quiet) std::fprintf(stderr, "bekc: note: %s\n", how.c_str());
        return;
    }
    Error e = Error::make(ErrorKind::Usage, std::to_string(errors.size()) +
                                                (errors.size() == 1 ? " error" : " errors") +
                                                " in the recordings; nothing was built");
    e.note(how + ", or pass --keep-going to build the others");
    fatal(std::move(e));
}

}  // namespace

std::vector<RecordedLoad> parse_recording(std::string_view text, const std::string& file,
                                          std::vector<std::string>& errors) {
    std::vector<RecordedLoad> loads;
    size_t number = 0;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        const std::string where = file + ":" + std::to_string(number);
        auto load = parse_line(line);
        if (!load) {
            errors.push_back(where + ": error: " + load.error());
            continue;
        }
        load->where = where;
        loads.push_back(std::move(*load));
    }
    return loads;
}

std::vector<RecordedLoad> distinct_loads(std::vector<RecordedLoad> loads) {
    std::set<std::pair<std::string, std::vector<std::string>>> seen;
    std::vector<RecordedLoad> out;
    for (auto& load : loads)
        if (seen.insert({load.cwd.string(), load.args}).second) out.push_back(std::move(load));
    return out;
}

std::vector<std::string> replay_args(const RecordedLoad& load, const ReplayOptions& o, int jobs,
                                     const std::optional<std::string>& trace) {
    BuildOptions b = load.options;
    b.trace = trace;
    if (o.arch) b.arch = *o.arch;
    if (o.cache_dir) b.cache_dir = *o.cache_dir;
    b.json = true;
    b.verbose = o.verbose;
    b.quiet = !o.verbose;
    b.jobs = jobs;
    return to_argv(b);
}

int run_replay(const ReplayOptions& options, BuildContext& ctx) {
    ReplayOptions o = options;
    // The children run in other directories.
    if (o.cache_dir) o.cache_dir = (ctx.cwd / *o.cache_dir).lexically_normal().string();
    std::vector<std::string> errors;
    std::vector<RecordedLoad> loads =
        traced(ctx.trace, "read", [&] { return distinct_loads(read_recordings(o, errors)); });
    report_bad_lines(o, errors);
    BuildOptions sizing;
    sizing.jobs = o.jobs;
    const int jobs = jobs_wanted(sizing);
    const fs::path cache_root = or_fatal(resolve_cache_root(o.cache_dir, ctx.env));
    ChildSlots slots = child_slots(jobs, o.verbose, false, cache_root, ctx);
    const fs::path self = own_executable();
    // --trace: each load's child writes its own, merged into the replay's.
    ChildTraces traces(ctx.trace, private_dir_places(cache_root, ctx));
    std::vector<Command> commands;
    std::vector<std::string> modules;
    for (const auto& load : loads) {
        Command c;
        c.argv = {self.string(), "build"};
        for (auto& arg : replay_args(load, o, jobs, traces.file(commands.size())))
            c.argv.push_back(std::move(arg));
        modules.push_back(module_of(load));
        c.cwd = load.cwd.string();
        if (auto makeflags = slots.makeflags()) c.env_overrides = {{"MAKEFLAGS", *makeflags}};
        c.description = module_of(load) + " (" + load.where + ")";
        c.inputs = load.options.inputs;
        commands.push_back(std::move(c));
    }
    // As a package's modules: the longest last time first, the biggest
    // inputs first on a first build (package/child_builds.hpp, start_order).
    CompileTimes times(cache_root);
    std::vector<std::string> timing_names;
    for (size_t i = 0; i < commands.size(); ++i) {
        std::string name = "load:" + commands[i].cwd + ":" + modules[i];
        for (const auto& input : commands[i].inputs) name += ":" + input;
        timing_names.push_back(std::move(name));
    }
    const std::vector<size_t> order = start_order(times, timing_names, commands);
    std::vector<Command> started;  // in the order they start
    for (size_t i : order) started.push_back(commands[i]);
    std::vector<ProcessResult> results = traced(ctx.trace, "loads", [&] {
        return run_children(ctx.runner, started, order, slots, o.quiet, &traces, modules);
    });
    traces.merge(commands);
    remember_times(times, timing_names, results);
    std::vector<LoadOutcome> outcomes;
    for (size_t i = 0; i < loads.size(); ++i) outcomes.push_back(outcome_of(loads[i], results[i]));
    const bool all_built = print_replay(o, loads, outcomes, errors.size());
    if (!errors.empty()) return kExitUsage;
    return all_built ? kExitOk : kExitSourceError;
}

}  // namespace bekc
