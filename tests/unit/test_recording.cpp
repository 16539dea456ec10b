// Recording the loads of a run and reading the recording back
// (prep/recording, package/replay): what a line holds, how a bad line is
// named, which requests count as the same, and what a replay runs.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <string>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "package/replay.hpp"
#include "prep/build_args.hpp"
#include "prep/recording.hpp"
#include "util/json_text.hpp"

using namespace bekc;

namespace {

BuildOptions with_everything_about_the_process() {
    BuildOptions o;
    o.inputs = {"src/k.cu", "/abs/other.cu"};
    o.name = "k";
    o.flags.include_dirs = {"inc", "/usr/include/x"};
    o.flags.defines = {"A=1"};
    o.arch = "sm_90";
    o.functions_json = "exports.json";
    o.cache_dir = "/c";
    o.read_only_caches = "/r";
    o.remote_cache = "http://x/";
    o.remote_read_only = true;
    o.output_dir = "out";
    o.depfile = "out/k.d";
    o.compile_commands = "cc.json";
    o.jobs = 8;
    o.json = o.verbose = o.quiet = o.force = o.explain_key = true;
    return o;
}

}  // namespace

TEST_CASE("a recorded line keeps what chooses the module, with absolute directories",
          "[recording]") {
    const std::string line = recorded_line(with_everything_about_the_process(), "/work/proj");
    REQUIRE(line.back() == '\n');
    auto j = parse_json(line);
    REQUIRE(j);
    CHECK((*j)["cwd"] == "/work/proj");
    CHECK_FALSE((*j)["bekc"].get<std::string>().empty());
    const auto args = (*j)["args"].get<std::vector<std::string>>();
    // The inputs as spelt (the display path is part of the key); the rest absolute.
    CHECK(args == std::vector<std::string>{"src/k.cu", "/abs/other.cu", "--name=k", "--arch=sm_90",
                                           "-I/work/proj/inc", "-I/usr/include/x", "-DA=1",
                                           "--functions=/work/proj/exports.json"});
    // The arguments parse back to the module's options.
    auto parsed = parse_build_args(args);
    REQUIRE(parsed);
    CHECK(*parsed == recorded_options(with_everything_about_the_process(), "/work/proj"));
}

TEST_CASE("append_record creates the file 0644 and refuses a link or a FIFO", "[recording]") {
    test::TempDir dir;
    const fs::path file = dir / "loads.jsonl";
    REQUIRE(append_record(file, "one\n"));
    REQUIRE(append_record(file, "two\n"));
    struct stat st {};
    REQUIRE(::stat(file.c_str(), &st) == 0);
    const mode_t mask = ::umask(0);
    ::umask(mask);
    CHECK((st.st_mode & 0777) == (0644 & ~mask));
    fs::create_symlink(file, dir / "link");
    auto linked = append_record(dir / "link", "three\n");
    REQUIRE_FALSE(linked);
    CHECK(linked.error().message.find("symbolic link") != std::string::npos);
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    auto fifo = append_record(dir / "fifo", "four\n");
    REQUIRE_FALSE(fifo);
    CHECK(fifo.error().message.find("not a regular file") != std::string::npos);
}

TEST_CASE("parse_recording names each bad line by FILE:LINE", "[replay]") {
    std::vector<std::string> errors;
    const std::string text =
        "{\"cwd\": \"/p\", \"args\": [\"/p/k.cu\", \"-O1\"], \"bekc\": \"0\"}\n"
        "\n"
        "nonsense\n"
        "[1]\n"
        "{\"cwd\": \"rel\", \"args\": []}\n"
        "{\"cwd\": \"/p\"}\n"
        "{\"cwd\": \"/p\", \"args\": [1]}\n"
        "{\"cwd\": \"/p\", \"args\": [\"k.cu\", \"--bogus\"]}\n";
    auto loads = parse_recording(text, "rec", errors);
    REQUIRE(loads.size() == 1);
    CHECK(loads[0].cwd == "/p");
    CHECK(loads[0].where == "rec:1");
    CHECK(loads[0].options.flags.opt_level == 1);
    REQUIRE(errors.size() == 6);
    CHECK(errors[0].starts_with("rec:3: error: not JSON"));
    CHECK(errors[1] == "rec:4: error: not a JSON object");
    CHECK(errors[2].starts_with("rec:5: error: no \"cwd\""));
    CHECK(errors[3].starts_with("rec:6: error: no \"args\""));
    CHECK(errors[4].starts_with("rec:7: error: no \"args\""));
    CHECK(errors[5].starts_with("rec:8: error: \"args\" are not `bekc build`'s"));
}

TEST_CASE("distinct_loads keeps the first of each cwd and arguments, in order", "[replay]") {
    std::vector<std::string> errors;
    auto loads = parse_recording(
        "{\"cwd\": \"/p\", \"args\": [\"/p/a.cu\"]}\n"
        "{\"cwd\": \"/p\", \"args\": [\"/p/b.cu\"]}\n"
        "{\"cwd\": \"/p\", \"args\": [\"/p/a.cu\"]}\n"
        "{\"cwd\": \"/q\", \"args\": [\"/p/a.cu\"]}\n",
        "rec", errors);
    auto distinct = distinct_loads(loads);
    REQUIRE(distinct.size() == 3);
    CHECK(distinct[0].where == "rec:1");
    CHECK(distinct[1].where == "rec:2");
    CHECK(distinct[2].where == "rec:4");
}

TEST_CASE("replay_args replaces the arch and adds the cache and the child's own options",
          "[replay]") {
    std::vector<std::string> errors;
    auto loads = parse_recording(
        "{\"cwd\": \"/p\", \"args\": [\"/p/a.cu\", \"--arch=sm_80\", \"-DX\"]}\n", "rec", errors);
    REQUIRE(loads.size() == 1);
    ReplayOptions o;
    o.arch = "sm_90";
    o.cache_dir = "/cache";
    auto args = replay_args(loads[0], o, 4);
    auto parsed = parse_build_args(args);
    REQUIRE(parsed);
    CHECK(parsed->arch == "sm_90");
    CHECK(parsed->cache_dir == "/cache");
    CHECK(parsed->flags.defines == std::vector<std::string>{"X"});
    CHECK(parsed->json);
    CHECK(parsed->quiet);
    CHECK(parsed->jobs == 4);
    // Without --arch the recorded one stays.
    CHECK(parse_build_args(replay_args(loads[0], {}, 1))->arch == "sm_80");
}
