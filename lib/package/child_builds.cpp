#include "package/child_builds.hpp"

#include <chrono>
#include <cstdio>

#include "driver/fatal.hpp"
#include "plan/command.hpp"
#include "run/interrupt.hpp"
#include "run/parallel.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc {

fs::path own_executable() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec)
        fatal(Error::make(ErrorKind::Internal, "cannot find its own executable: " + ec.message()));
    return self;
}

std::optional<std::string> ChildSlots::makeflags() const {
    if (!served) return std::nullopt;
    return served->makeflags();
}

ChildSlots child_slots(int jobs, bool verbose, bool dry_run, const fs::path& cache_root,
                       const BuildContext& ctx) {
    ChildSlots out{JobSlots::take(jobs, ctx.env), std::nullopt};
    if (verbose && !out.from_make.refusal().empty())
        std::fprintf(stderr, "bekc: note: %s\n", out.from_make.refusal().c_str());
    if (!out.from_make.named_by_make() && !dry_run) {
        out.served.emplace(or_fatal(JobSlots::serve(jobs, jobs - ChildSlots::children_for(jobs),
                                                    private_dir_places(cache_root, ctx))));
    }
    return out;
}

ChildTraces::ChildTraces(Trace* trace, const PrivateDirPlaces& places) : trace_(trace) {
    if (!trace_) return;
    auto dir = private_temp_dir(places, "trace");
    if (!dir) fatal(Error::make(ErrorKind::Cache, dir.error().message));
    dir_ = *dir;
}

ChildTraces::~ChildTraces() {
    if (dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

std::optional<std::string> ChildTraces::file(size_t i) const {
    if (!trace_) return std::nullopt;
    return (dir_ / (std::to_string(i) + ".json")).string();
}

void ChildTraces::merge(const std::vector<Command>& commands) const {
    if (!trace_) return;
    for (size_t i = 0; i < commands.size(); ++i) {
        const fs::path file = *this->file(i);
        std::error_code ec;
        if (!fs::exists(fs::symlink_status(file, ec))) continue;
        ReadOptions no_links;
        no_links.follow_symlinks = false;
        auto text = read_file(file, no_links);
        std::string why = text ? "" : text.error().message;
        if (text)
            if (auto merged = trace_->merge(*text, commands[i].description); !merged)
                why = merged.error();
        if (!why.empty())
            std::fprintf(stderr, "bekc: warning: the trace of %s is left out: %s\n",
                         commands[i].description.c_str(), why.c_str());
    }
}

std::vector<size_t> start_order(const CompileTimes& times,
                                const std::vector<std::string>& timing_names,
                                const std::vector<Command>& commands) {
    auto seconds = [&](size_t i) { return times.seconds(timing_names[i]); };
    auto size = [&](size_t i) {
        double bytes = 0;
        for (const auto& input : commands[i].inputs) {
            std::error_code ec;
            const auto n = fs::file_size(fs::path(commands[i].cwd) / input, ec);
            if (!ec) bytes += static_cast<double>(n);
        }
        return bytes;
    };
    return longest_first(commands.size(), seconds, size);
}

void remember_times(CompileTimes& times, const std::vector<std::string>& timing_names,
                    const std::vector<ProcessResult>& results) {
    for (size_t i = 0; i < results.size(); ++i)
        if (results[i].ok())
            times.record(timing_names[i],
                         std::chrono::duration<double>(results[i].wall_time).count());
    times.save();
}

namespace {

// --trace: a child's event in the lane it ran in, with the module it built
// and whether its build was a cache hit.
void trace_child(Trace& trace, const Command& c, const ProcessResult& r, const std::string& module,
                 int lane, TraceClock::time_point start) {
    Trace::Args args = {{"module", module}, {"command", display_command(c)}};
    const nlohmann::json j = child_json(r);
    args["cache"] = !r.ok() ? "failed" : j.value("cache_hit", false) ? "hit" : "miss";
    args["status"] = r.ok() ? "ok" : r.describe();
    trace.step(c.description, "module", lane, start, TraceClock::now(), std::move(args));
}

}  // namespace

std::vector<ProcessResult> run_children(Runner& runner, const std::vector<Command>& commands,
                                        const std::vector<size_t>& order, ChildSlots& slots,
                                        bool quiet, const ChildTraces* traces,
                                        const std::vector<std::string>& modules) {
    size_t done = 0;
    Trace* trace = traces ? traces->trace() : nullptr;
    std::vector<int> lanes(trace ? commands.size() : 0);
    std::vector<TraceClock::time_point> starts(lanes.size());
    ParallelOptions po;
    po.keep_going = true;
    po.tokens = slots.tokens();
    auto started = runner.run(
        commands, slots.at_once(),
        [&](const ProgressEvent& e) {
            if (trace && e.kind == ProgressEvent::Kind::Started) {
                lanes[e.index] = trace->take_lane();
                starts[e.index] = TraceClock::now();
            } else if (trace) {
                const size_t i = order[e.index];
                trace_child(*trace, e.command, *e.result, i < modules.size() ? modules[i] : "",
                            lanes[e.index], starts[e.index]);
                trace->give_lane(lanes[e.index]);
            }
            // A child stopped by Ctrl-C did not fail to build.
            if (e.kind != ProgressEvent::Kind::Finished || quiet || interrupted_by()) return;
            ++done;
            std::fprintf(stderr, "[%zu/%zu] %s: %s\n", done, commands.size(),
                         e.command.description.c_str(),
                         e.result->ok() ? "done" : e.result->describe().c_str());
        },
        po);
    throw_if_interrupted();
    std::vector<ProcessResult> results(order.size());  // in the caller's order
    for (size_t k = 0; k < order.size(); ++k) results[order[k]] = std::move(started[k]);
    return results;
}

ProcessResult run_child(Runner& runner, const Command& command, const ChildTraces& traces,
                        const std::string& module) {
    Trace* trace = traces.trace();
    if (!trace) return runner.run_one(command);
    const int lane = trace->take_lane();
    const auto start = TraceClock::now();
    ProcessResult r = runner.run_one(command);
    trace_child(*trace, command, r, module, lane, start);
    trace->give_lane(lane);
    return r;
}

std::string child_messages(const ProcessResult& r) {
    std::string out = r.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    size_t last = out.rfind('\n') + 1;  // 0 when there is one line
    if (parse_json(out.substr(last)).value_or(nullptr).is_object()) out.erase(last);
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out;
}

nlohmann::json child_json(const ProcessResult& r) {
    std::string out = r.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    nlohmann::json j = parse_json(out.substr(out.rfind('\n') + 1)).value_or(nullptr);
    return j.is_object() ? j : nlohmann::json();
}

}  // namespace bekc
