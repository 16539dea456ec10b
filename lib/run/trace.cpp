#include "run/trace.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "util/json_text.hpp"
#include "util/version.hpp"

namespace bekc {

namespace {

using nlohmann::ordered_json;

int64_t since_epoch_us(TraceClock::time_point t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

ordered_json metadata_event(std::string_view name, int pid, int tid, ordered_json args) {
    return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// The process numbers of `events` in the order they first appear.
std::vector<int64_t> pids_of(const ordered_json& events) {
    std::vector<int64_t> pids;
    for (const auto& e : events) {
        int64_t pid = e.value("pid", int64_t{1});
        if (std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
    }
    return pids;
}

// `text` as a trace: an object with a list of events, each an object whose
// "pid" is an integer and "ts" a number when they are there.
std::expected<ordered_json, std::string> trace_of(std::string_view text) {
    auto parsed = parse_json<ordered_json>(text);
    if (!parsed) return std::unexpected(parsed.error());
    if (!parsed->is_object() || !parsed->contains("traceEvents") ||
        !(*parsed)["traceEvents"].is_array())
        return std::unexpected(std::string("no \"traceEvents\" list"));
    for (const auto& e : (*parsed)["traceEvents"])
        if (!e.is_object() || (e.contains("pid") && !e["pid"].is_number_integer()) ||
            (e.contains("ts") && !e["ts"].is_number()))
            return std::unexpected("an event that is not one: " + dump_json(e));
    return parsed;
}

// When the trace's times count from, on CLOCK_MONOTONIC, when it says.
std::optional<int64_t> origin_us_of(const ordered_json& trace) {
    auto other = trace.find("otherData");
    if (other == trace.end() || !other->is_object()) return std::nullopt;
    auto origin = other->find("monotonic_origin_us");
    if (origin == other->end() || !origin->is_number_integer()) return std::nullopt;
    return origin->get<int64_t>();
}

Error trace_error(const fs::path& path, std::string why) {
    return Error::make(ErrorKind::Usage, "--trace " + path.string() + ": " + std::move(why));
}

// A failure of the layer below, as --trace's: its file, line and notes kept.
Error trace_error(const fs::path& path, Error cause) {
    cause.as(ErrorKind::Usage).within("--trace " + path.string());
    return cause;
}

}  // namespace

Trace::Trace(std::string name, TraceClock::time_point origin)
    : name_(std::move(name)), origin_(origin) {}

void Trace::set_name(std::string name) {
    std::lock_guard lock(mutex_);
    name_ = std::move(name);
}

std::string Trace::name() const {
    std::lock_guard lock(mutex_);
    return name_;
}

int64_t Trace::micros(TraceClock::time_point t) const {
    return std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count();
}

void Trace::add(ordered_json event) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
}

void Trace::span(std::string_view name, std::string_view category, TraceClock::time_point start,
                 TraceClock::time_point end, Args args) {
    step(name, category, 0, start, end, std::move(args));
}

int Trace::take_lane() {
    std::lock_guard lock(mutex_);
    auto free = std::find(lanes_busy_.begin(), lanes_busy_.end(), false);
    if (free == lanes_busy_.end()) free = lanes_busy_.insert(free, false);
    *free = true;
    return static_cast<int>(free - lanes_busy_.begin()) + 1;
}

void Trace::give_lane(int lane) {
    std::lock_guard lock(mutex_);
    if (lane >= 1 && static_cast<size_t>(lane) <= lanes_busy_.size()) lanes_busy_[lane - 1] = false;
}

void Trace::step(std::string_view name, std::string_view category, int lane,
                 TraceClock::time_point start, TraceClock::time_point end, Args args) {
    // Whole microseconds of both ends: a step that starts as another of its
    // lane ends starts no earlier than it ends.
    const int64_t ts = micros(start);
    ordered_json e = {{"name", name},
                      {"cat", category},
                      {"ph", "X"},
                      {"ts", ts},
                      {"dur", std::max<int64_t>(0, micros(end) - ts)},
                      {"pid", 1},
                      {"tid", lane}};
    if (!args.empty()) e["args"] = std::move(args);
    add(std::move(e));
}

std::expected<void, std::string> Trace::merge(std::string_view text, std::string_view name) {
    auto parsed = trace_of(text);
    if (!parsed) return std::unexpected(parsed.error());
    ordered_json& events = (*parsed)["traceEvents"];
    // The child's origin on this trace's time line.
    const int64_t shift =
        origin_us_of(*parsed).value_or(since_epoch_us(origin_)) - since_epoch_us(origin_);
    std::lock_guard lock(mutex_);
    std::map<int64_t, int> renumbered;
    const std::vector<int64_t> pids = pids_of(events);
    for (int64_t pid : pids) renumbered[pid] = next_pid_++;
    const int first = pids.empty() ? 0 : renumbered[pids.front()];
    for (auto& e : events) {
        const int pid = renumbered[e.value("pid", int64_t{1})];
        e["pid"] = pid;
        if (e.contains("ts")) {
            if (e["ts"].is_number_integer())
                e["ts"] = e["ts"].get<int64_t>() + shift;
            else
                e["ts"] = e["ts"].get<double>() + static_cast<double>(shift);
        }
        if (e.value("ph", "") == "M" && e.value("name", "") == "process_sort_index")
            e["args"] = {{"sort_index", pid}};
        if (e.value("ph", "") == "M" && e.value("name", "") == "process_name" && pid == first &&
            !name.empty())
            e["args"] = {{"name", name}};
        events_.push_back(std::move(e));
    }
    return {};
}

std::vector<ordered_json> Trace::metadata() const {
    std::vector<ordered_json> out = {
        metadata_event("process_name", 1, 0, {{"name", name_}}),
        metadata_event("process_sort_index", 1, 0, {{"sort_index", 1}}),
        metadata_event("thread_name", 1, 0, {{"name", "build"}}),
        metadata_event("thread_sort_index", 1, 0, {{"sort_index", 0}}),
    };
    for (size_t k = 1; k <= lanes_busy_.size(); ++k) {
        const int lane = static_cast<int>(k);
        out.push_back(
            metadata_event("thread_name", 1, lane, {{"name", "lane " + std::to_string(lane)}}));
        out.push_back(metadata_event("thread_sort_index", 1, lane, {{"sort_index", lane}}));
    }
    return out;
}

std::string Trace::text() const {
    std::lock_guard lock(mutex_);
    std::string out = "{\"traceEvents\":[\n";
    bool first = true;
    auto append = [&](const ordered_json& e) {
        out += first ? "" : ",\n";
        out += dump_json(e);
        first = false;
    };
    for (const auto& e : metadata()) append(e);
    for (const auto& e : events_) append(e);
    ordered_json other = {{"tool", "bekc"},
                          {"version", kVersion},
                          {"clock", "CLOCK_MONOTONIC"},
                          {"monotonic_origin_us", since_epoch_us(origin_)}};
    out += "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":" + dump_json(other) + "}\n";
    return out;
}

std::expected<void, Error> Trace::write(const fs::path& path) const {
    if (auto written = write_atomic(path, text()); !written)
        return std::unexpected(trace_error(path, written.error()));
    return {};
}

std::expected<void, Error> check_trace_path(const fs::path& path) {
    if (path.empty()) return std::unexpected(trace_error(path, "name a file"));
    std::error_code ec;
    if (fs::is_directory(path, ec))
        return std::unexpected(trace_error(path, "it is a directory; name a file in it"));
    if (auto regular = check_writable_regular(path); !regular)
        return std::unexpected(trace_error(path, regular.error()));
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    if (!fs::is_directory(dir, ec))
        return std::unexpected(
            trace_error(path, "its directory " + dir.string() + " does not exist"));
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return std::unexpected(trace_error(path, errno_message("write in", dir, errno)));
    return {};
}

TraceSpan::~TraceSpan() {
    if (!trace_) return;
    Trace::Args args;
    if (std::uncaught_exceptions() > exceptions_) args["failed"] = true;
    trace_->span(name_, "phase", start_, TraceClock::now(), std::move(args));
}

}  // namespace bekc
