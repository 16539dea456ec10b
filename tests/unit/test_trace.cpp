// The trace of a build (run/trace.hpp): valid JSON in the Chrome trace event
// format, complete events in microseconds on lanes that never hold two
// overlapping steps, any command's bytes escaped, a child's trace moved onto
// the parent's clock with a process of its own, and written atomically or
// refused with the path named.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "../helpers/temp_dir.hpp"
#include "plan/build_graph.hpp"
#include "run/execute.hpp"
#include "run/trace.hpp"
#include "util/json_text.hpp"

using namespace bekc;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

json parsed(const Trace& trace) {
    auto j = parse_json(trace.text());
    REQUIRE(j.has_value());
    REQUIRE(j->is_object());
    REQUIRE((*j)["traceEvents"].is_array());
    return *j;
}

std::vector<json> complete_events(const json& trace) {
    std::vector<json> out;
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "X") out.push_back(e);
    return out;
}

// Every pair of complete events of one process's lane (tid > 0) is disjoint.
void check_lanes_disjoint(const std::vector<json>& events) {
    std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> lanes;
    for (const auto& e : events)
        if (e["tid"].get<int64_t>() > 0)
            lanes[{e["pid"], e["tid"]}].push_back(
                {e["ts"], e["ts"].get<int64_t>() + e["dur"].get<int64_t>()});
    for (auto& [lane, spans] : lanes) {
        std::sort(spans.begin(), spans.end());
        for (size_t i = 1; i < spans.size(); ++i) {
            INFO("lane " << lane.second << " of process " << lane.first);
            CHECK(spans[i].first >= spans[i - 1].second);
        }
    }
}

std::string metadata_name(const json& trace, const std::string& what, int64_t pid, int64_t tid) {
    for (const auto& e : trace["traceEvents"])
        if (e["ph"] == "M" && e["name"] == what && e["pid"] == pid && e["tid"] == tid)
            return e["args"]["name"];
    return "";
}

}  // namespace

TEST_CASE("a trace is JSON whose complete events count microseconds from its origin", "[trace]") {
    const auto origin = TraceClock::now();
    Trace trace("kernels", origin);
    trace.span("prepare", "phase", origin + 10us, origin + 30us);
    const int lane = trace.take_lane();
    CHECK(lane == 1);
    trace.step("nvcc k.cu", "compile", lane, origin + 40us, origin + 1040us,
               {{"kind", "compile"}, {"command", "nvcc -c k.cu"}});
    trace.give_lane(lane);

    json j = parsed(trace);
    auto events = complete_events(j);
    REQUIRE(events.size() == 2);
    CHECK(events[0] == json{{"name", "prepare"},
                            {"cat", "phase"},
                            {"ph", "X"},
                            {"ts", 10},
                            {"dur", 20},
                            {"pid", 1},
                            {"tid", 0}});
    CHECK(events[1]["ts"] == 40);
    CHECK(events[1]["dur"] == 1000);
    CHECK(events[1]["tid"] == 1);
    CHECK(events[1]["args"]["command"] == "nvcc -c k.cu");
    // The viewers name the process and its threads from the metadata events.
    CHECK(metadata_name(j, "process_name", 1, 0) == "kernels");
    CHECK(metadata_name(j, "thread_name", 1, 0) == "build");
    CHECK(metadata_name(j, "thread_name", 1, 1) == "lane 1");
    CHECK(j["otherData"]["clock"] == "CLOCK_MONOTONIC");
    CHECK(j["otherData"]["monotonic_origin_us"] ==
          std::chrono::duration_cast<std::chrono::microseconds>(origin.time_since_epoch()).count());
}

TEST_CASE("a step takes the lowest lane free, so overlapping steps never share one", "[trace]") {
    const auto origin = TraceClock::now();
    Trace trace("k", origin);
    // Steps starting and ending at random as a -j 3 build's would, each in
    // the lane it took when it started.
    std::mt19937 random(7);
    struct Running {
        int lane;
        TraceClock::time_point start;
    };
    std::vector<Running> running;
    auto now = origin;
    int most = 0;
    for (int i = 0; i < 400; ++i) {
        now += std::chrono::microseconds(random() % 50);
        const bool start = running.empty() || (running.size() < 3 && random() % 2 == 0);
        if (start) {
            running.push_back({trace.take_lane(), now});
            most = std::max(most, running.back().lane);
            continue;
        }
        size_t k = random() % running.size();
        trace.step("s", "compile", running[k].lane, running[k].start, now);
        trace.give_lane(running[k].lane);
        running.erase(running.begin() + static_cast<long>(k));
    }
    CHECK(most == 3);  // never more lanes than steps at once
    check_lanes_disjoint(complete_events(parsed(trace)));
}

TEST_CASE("a trace escapes any bytes of a command or a name", "[trace]") {
    const std::vector<std::string> odd = {
        "nvcc \"-DNAME=\\\"a b\\\"\" k.cu",   // quotes and backslashes
        "line one\nline two\ttab\r\x01\x1f",  // control characters
        std::string("nul\0inside", 10),       // NUL
        "/tmp/caf\xe9/k.cu",                  // Latin-1, not UTF-8
        "caf\xc3\xa9 \xe2\x82\xac",           // UTF-8
        "</script>{\"ph\":\"X\"},",           // text that looks like the format
    };
    Trace trace(odd[3]);
    const auto origin = trace.origin();
    for (const auto& text : odd) {
        const int lane = trace.take_lane();
        trace.step(text, text, lane, origin, origin + 5us, {{"command", text}});
        trace.give_lane(lane);
    }
    json j = parsed(trace);
    auto events = complete_events(j);
    REQUIRE(events.size() == odd.size());
    for (size_t i = 0; i < odd.size(); ++i) {
        // parse_json turns Python's escapes back into the same bytes.
        CHECK(events[i]["name"] == odd[i]);
        CHECK(events[i]["args"]["command"] == odd[i]);
    }
    CHECK(metadata_name(j, "process_name", 1, 0) == odd[3]);
}

TEST_CASE("a merged trace keeps the child's times on the parent's clock, a process each",
          "[trace]") {
    const auto origin = TraceClock::now();
    Trace parent("package", origin);
    Trace child("ops", origin + 2000us);
    child.span("prepare", "phase", origin + 2010us, origin + 2020us);
    const int lane = child.take_lane();
    child.step("nvcc ops.cu", "compile", lane, origin + 2100us, origin + 2600us);
    REQUIRE(parent.merge(child.text()));
    // The parent may name the child's process as its lane names the child.
    REQUIRE(parent.merge(Trace("other", origin + 5000us).text(), "other.cpp as other"));

    json j = parsed(parent);
    auto events = complete_events(j);
    REQUIRE(events.size() == 2);
    CHECK(events[0]["pid"] == 2);
    CHECK(events[0]["ts"] == 2010);
    CHECK(events[1]["pid"] == 2);
    CHECK(events[1]["ts"] == 2100);
    CHECK(events[1]["dur"] == 500);
    CHECK(metadata_name(j, "process_name", 1, 0) == "package");
    CHECK(metadata_name(j, "process_name", 2, 0) == "ops");
    CHECK(metadata_name(j, "thread_name", 2, 1) == "lane 1");
    CHECK(metadata_name(j, "process_name", 3, 0) == "other.cpp as other");

    // A merged trace merges again: each of its processes gets a new number.
    Trace top("pack", origin);
    REQUIRE(top.merge(parent.text()));
    json again = parsed(top);
    CHECK(metadata_name(again, "process_name", 2, 0) == "package");
    CHECK(metadata_name(again, "process_name", 3, 0) == "ops");
    CHECK(metadata_name(again, "process_name", 4, 0) == "other.cpp as other");
    CHECK(complete_events(again)[1]["ts"] == 2100);
}

TEST_CASE("a merge refuses what is not a trace and adds nothing", "[trace]") {
    Trace trace("package");
    const std::string before = trace.text();
    for (std::string bad :
         {"", "not json", "[]", "{}", R"({"traceEvents": 3})", R"({"traceEvents": [1]})",
          R"({"traceEvents": [{"pid": "one"}]})", R"({"traceEvents": [{"ts": "soon"}]})"}) {
        INFO(bad);
        CHECK_FALSE(trace.merge(bad));
    }
    CHECK(trace.text() == before);
}

TEST_CASE("a trace is written whole, or the error names the path", "[trace]") {
    test::TempDir dir;
    Trace trace("k");
    const fs::path file = dir / "t.json";
    test::write_file(file, "old");
    REQUIRE(trace.write(file));
    CHECK(parse_json(test::read_file(file)).has_value());
    CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);

    auto missing = trace.write(dir / "no" / "t.json");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().kind == ErrorKind::Usage);
    CHECK(missing.error().message.find((dir / "no" / "t.json").string()) != std::string::npos);
}

TEST_CASE("a --trace path that cannot be written is refused before the build", "[trace]") {
    test::TempDir dir;
    CHECK(check_trace_path(dir / "t.json"));
    CHECK(check_trace_path(dir / "t.json").has_value());
    auto is_dir = check_trace_path(dir.path());
    REQUIRE_FALSE(is_dir);
    CHECK(is_dir.error().kind == ErrorKind::Usage);
    CHECK(is_dir.error().message ==
          "--trace " + dir.path().string() + ": it is a directory; name a file in it");
    auto no_dir = check_trace_path(dir / "no" / "t.json");
    REQUIRE_FALSE(no_dir);
    CHECK(no_dir.error().message == "--trace " + (dir / "no" / "t.json").string() +
                                        ": its directory " + (dir / "no").string() +
                                        " does not exist");
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    auto fifo = check_trace_path(dir / "fifo");
    REQUIRE_FALSE(fifo);
    CHECK(fifo.error().kind == ErrorKind::Usage);
    CHECK(fifo.error().message.find("a FIFO") != std::string::npos);
    if (::geteuid() != 0) {
        fs::create_directory(dir / "ro");
        fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
        auto ro = check_trace_path(dir / "ro" / "t.json");
        REQUIRE_FALSE(ro);
        CHECK(ro.error().message.find("Permission denied") != std::string::npos);
        fs::permissions(dir / "ro", fs::perms::owner_all);
    }
}

TEST_CASE("a phase span records nothing without a trace, and says when it failed", "[trace]") {
    { TraceSpan nothing(nullptr, "prepare"); }
    Trace trace("k");
    { TraceSpan ok(&trace, "plan"); }
    try {
        TraceSpan failing(&trace, "execute");
        throw std::runtime_error("the build failed");
    } catch (const std::runtime_error&) {
    }
    CHECK(traced(&trace, "deliver", [] { return 42; }) == 42);
    auto events = complete_events(parsed(trace));
    REQUIRE(events.size() == 3);
    CHECK(events[0]["name"] == "plan");
    CHECK_FALSE(events[0].contains("args"));
    CHECK(events[1]["name"] == "execute");
    CHECK(events[1]["args"]["failed"] == true);
    CHECK(events[2]["name"] == "deliver");
}

TEST_CASE("an executed graph's trace has a step each, side by side in lanes", "[trace]") {
    // Four processes of 50 ms under -j 2, then one after them: two lanes.
    test::TempDir dir;
    BuildGraph graph;
    for (int i = 0; i < 4; ++i) {
        Step s;
        s.kind = StepKind::Compile;
        s.command.argv = {"/bin/sleep", "0.05"};
        s.command.description = "sleep " + std::to_string(i);
        graph.steps.push_back(s);
    }
    Step link;
    link.kind = StepKind::Link;
    link.command.argv = {"/bin/true"};
    link.command.description = "link";
    link.after = {0, 1, 2, 3};
    graph.steps.push_back(link);
    Step wrapper;
    wrapper.kind = StepKind::WriteWrapper;
    wrapper.command.outputs = {(dir / "w.cpp").string()};
    wrapper.content = "int x;";
    graph.steps.insert(graph.steps.begin(), wrapper);
    for (auto& s : graph.steps)
        for (auto& a : s.after) ++a;

    ProcessRunner runner;
    Trace trace("k");
    ExecuteOptions eo;
    eo.jobs = 2;
    eo.trace = &trace;
    // The step cache answers the third sleep.
    eo.reuse = [](const Step& s) {
        return s.command.description == "sleep 2" ? StepCacheOutcome::Hit
               : s.kind == StepKind::Compile      ? StepCacheOutcome::Miss
                                                  : StepCacheOutcome::NotKept;
    };
    REQUIRE(execute_graph(graph, runner, eo));

    std::vector<json> events, own;  // in lanes; on the build's thread
    for (auto& e : complete_events(parsed(trace))) (e["tid"] == 0 ? own : events).push_back(e);
    std::map<std::string, json> by_name;
    for (const auto& e : events) by_name[e["name"]] = e;
    REQUIRE(events.size() == graph.steps.size());
    // The step cache's look-ups of each wave that has steps it keeps.
    REQUIRE(own.size() == 1);  // the first wave: the sleeps; the link keeps nothing
    CHECK(own[0]["name"] == "step cache");
    CHECK(own[0]["cat"] == "step-cache");
    CHECK(own[0]["args"] == json{{"hits", 1}, {"misses", 3}});
    CHECK(by_name.at("sleep 2")["args"]["step_cache"] == "hit");
    CHECK(by_name.at("sleep 0")["args"]["step_cache"] == "miss");
    CHECK(by_name.at("sleep 0")["args"]["command"] == "/bin/sleep 0.05");
    CHECK(by_name.at("sleep 0")["args"]["status"] == "ok");
    CHECK(by_name.at("sleep 0")["cat"] == "compile");
    CHECK(by_name.at("sleep 0")["dur"].get<int64_t>() >= 40000);
    CHECK_FALSE(by_name.at("link")["args"].contains("step_cache"));
    CHECK(by_name.at("write-wrapper " + (dir / "w.cpp").string())["cat"] == "write-wrapper");
    int lanes = 0;
    for (const auto& e : events) lanes = std::max(lanes, e["tid"].get<int>());
    CHECK(lanes == 2);
    check_lanes_disjoint(events);
    CHECK(by_name.at("write-wrapper " + (dir / "w.cpp").string())["args"]["outputs"] ==
          json::array({(dir / "w.cpp").string()}));
    // The link starts after every sleep ended.
    for (const auto& e : events)
        if (e["cat"] == "compile")
            CHECK(by_name.at("link")["ts"].get<int64_t>() >=
                  e["ts"].get<int64_t>() + e["dur"].get<int64_t>());
}

TEST_CASE("a step that failed is in the trace with its status", "[trace]") {
    BuildGraph graph;
    Step fails;
    fails.kind = StepKind::Compile;
    fails.command.argv = {"/bin/false"};
    fails.command.description = "c++ bad.cpp";
    graph.steps.push_back(fails);
    ProcessRunner runner;
    Trace trace("k");
    ExecuteOptions eo;
    eo.trace = &trace;
    REQUIRE_FALSE(execute_graph(graph, runner, eo));
    auto events = complete_events(parsed(trace));
    REQUIRE(events.size() == 1);
    CHECK(events[0]["name"] == "c++ bad.cpp");
    CHECK(events[0]["args"]["status"] == "exited with code 1");
}
