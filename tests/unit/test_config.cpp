// bekc.conf (config/config.hpp), the settings layered over the environment
// (config/settings.hpp), the build history's key diff
// (store/build_history.hpp) and the hit and miss counters (store/stats.hpp).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "../helpers/env.hpp"
#include "../helpers/temp_dir.hpp"
#include "config/settings.hpp"
#include "store/build_history.hpp"
#include "store/key.hpp"
#include "store/layout.hpp"
#include "store/lock.hpp"
#include "store/stats.hpp"

using namespace bekc;
namespace fs = std::filesystem;

using test::env_of;

namespace {

std::vector<std::string> parse_errors(std::string_view text) {
    auto parsed = parse_config(text, "/etc/x/bekc.conf");
    REQUIRE_FALSE(parsed);
    return parsed.error();
}

}  // namespace

TEST_CASE("bekc.conf: keys, comments, blank lines and values as the variables hold them") {
    auto parsed = parse_config(
        "# team settings\n"
        "\n"
        "cache_dir = /scratch/bekc\n"
        "  max_size=20G  \n"
        "remote_cache = https://cache.example/bekc\n"
        "remote_read_only = Yes\n"
        "launcher = ccache\n"
        "base_dir = src\n"
        "log_file = ../logs/bekc.jsonl\n",
        "/etc/x/bekc.conf");
    REQUIRE(parsed);
    const auto& v = parsed->values;
    CHECK(v.at("BEKC_CACHE_DIR").value == "/scratch/bekc");
    CHECK(v.at("BEKC_CACHE_DIR").line == 3);
    CHECK(v.at("BEKC_CACHE_MAX_SIZE").value == "20G");
    CHECK(v.at("BEKC_REMOTE_CACHE").value == "https://cache.example/bekc");
    CHECK(v.at("BEKC_REMOTE_CACHE_READONLY").value == "1");
    CHECK(v.at("BEKC_LAUNCHER").value == "ccache");  // a name: looked up on PATH
    // Relative paths are relative to the file's directory.
    CHECK(v.at("BEKC_BASE_DIR").value == "/etc/x/src");
    CHECK(v.at("BEKC_LOG").value == "/etc/logs/bekc.jsonl");
    CHECK(parsed->origin("BEKC_CACHE_MAX_SIZE") == "/etc/x/bekc.conf:4");
}

TEST_CASE("bekc.conf: a launcher path is relative to the file, an empty remote turns it off") {
    auto parsed = parse_config("launcher = bin/ccache\nremote_cache =\n", "/etc/x/bekc.conf");
    REQUIRE(parsed);
    CHECK(parsed->values.at("BEKC_LAUNCHER").value == "/etc/x/bin/ccache");
    CHECK(parsed->values.at("BEKC_REMOTE_CACHE").value.empty());
}

TEST_CASE("bekc.conf: every bad line is an error naming the file and line") {
    auto errors = parse_errors(
        "cache_dir = /a\n"
        "max_sise = 1G\n"
        "max_size = lots\n"
        "remote_read_only = maybe\n"
        "just words\n"
        "cache_dir = /b\n"
        "remote_cache = ftp://x\n"
        "log_file = ~/src\n"
        "launcher =\n");
    REQUIRE(errors.size() == 8);
    CHECK(
        errors[0].starts_with("/etc/x/bekc.conf:2: error: unknown key 'max_sise'; did you mean "
                              "max_size? bekc.conf knows cache_dir, max_size,"));
    CHECK(errors[1].starts_with("/etc/x/bekc.conf:3: error: max_size: "));
    CHECK(errors[2] ==
          "/etc/x/bekc.conf:4: error: remote_read_only must be true or false (or yes/no, on/off, "
          "1/0), not 'maybe'");
    CHECK(errors[3] == "/etc/x/bekc.conf:5: error: expected 'key = value'");
    CHECK(errors[4] == "/etc/x/bekc.conf:6: error: cache_dir is set twice (first on line 1)");
    CHECK(errors[5].starts_with("/etc/x/bekc.conf:7: error: remote_cache must be an http://"));
    CHECK(errors[6].starts_with("/etc/x/bekc.conf:8: error: log_file: '~' is not expanded"));
    CHECK(errors[7] == "/etc/x/bekc.conf:9: error: launcher needs a value");
}

TEST_CASE("bekc.conf: an unknown key gets the key it most likely meant") {
    auto first_error = [](const std::string& line) { return parse_errors(line + "\n").at(0); };
    for (std::string typo :
         {"max_sise = 1G", "MAX-SIZE = 1G", "BEKC_CACHE_MAX_SIZE = 1G", "cache_max_size = 1G"})
        CHECK_THAT(first_error(typo),
                   Catch::Contains("; did you mean max_size? bekc.conf knows cache_dir"));
    CHECK_THAT(first_error("BEKC_LOG = /tmp/log"), Catch::Contains("did you mean log_file?"));
    CHECK_THAT(first_error("remote-cache = http://x"),
               Catch::Contains("did you mean remote_cache?"));
    CHECK_THAT(
        first_error("colour = yes"),
        Catch::StartsWith("/etc/x/bekc.conf:1: error: unknown key 'colour'; bekc.conf knows"));
}

TEST_CASE("bekc.conf: read_only_caches is a ':' list of paths relative to the file; empty: none") {
    auto parsed = parse_config("read_only_caches = team:/abs/x::../y:\n", "/etc/x/bekc.conf");
    REQUIRE(parsed);
    CHECK(parsed->values.at("BEKC_READ_ONLY_CACHES").value == "/etc/x/team:/abs/x:/etc/y");
    auto none = parse_config("read_only_caches =\n", "/etc/x/bekc.conf");
    REQUIRE(none);
    CHECK(none->values.at("BEKC_READ_ONLY_CACHES").value.empty());
    CHECK(parse_errors("read_only_caches = /a:~/team\n") ==
          std::vector<std::string>{"/etc/x/bekc.conf:1: error: read_only_caches: '~' is not "
                                   "expanded in bekc.conf; write the absolute path"});
    CHECK(find_setting("read_only_caches")->flag == "--read-only-caches");
}

TEST_CASE("settings: read_only_caches is read only from a file no one else can write") {
    // It chooses whose libraries a build loads.
    test::TempDir dir;
    const fs::path team = dir / "c/bekc.conf";
    test::write_file(team, "read_only_caches = /evil\n");
    ::chmod(team.c_str(), 0664);
    auto settings = load_settings((dir / "c").string(), env_of({{"HOME", (dir / "h").string()}}));
    REQUIRE(settings);
    CHECK_FALSE(settings->lookup()("BEKC_READ_ONLY_CACHES"));
    REQUIRE(settings->warnings().size() == 1);
    CHECK(settings->warnings()[0].starts_with(team.string() +
                                              ":1: warning: read_only_caches ignored"));
}

TEST_CASE("settings: the environment overrides the files, the specific file the user's") {
    test::TempDir dir;
    test::write_file(dir / "home/.config/bekc/bekc.conf",
                     "cache_dir = " + (dir / "c").string() + "\nmax_size = 1G\nlauncher = a\n");
    test::write_file(dir / "c/bekc.conf", "max_size = 2G\n");
    auto env = std::map<std::string, std::string>{{"HOME", (dir / "home").string()}};
    auto settings = load_settings(std::nullopt, env_of(env));
    REQUIRE(settings);
    EnvLookup lookup = settings->lookup();
    // The cache directory comes from the user's file, and its bekc.conf wins.
    CHECK(lookup("BEKC_CACHE_DIR") == (dir / "c").string());
    CHECK(lookup("BEKC_CACHE_MAX_SIZE") == "2G");
    CHECK(settings->find("BEKC_CACHE_MAX_SIZE")->origin == (dir / "c/bekc.conf").string() + ":1");
    CHECK(lookup("BEKC_LAUNCHER") == "a");
    CHECK(lookup("HOME") == (dir / "home").string());  // passes through
    CHECK_FALSE(lookup("BEKC_REMOTE_CACHE"));

    env["BEKC_CACHE_MAX_SIZE"] = "3G";
    settings = load_settings(std::nullopt, env_of(env));
    REQUIRE(settings);
    CHECK(settings->lookup()("BEKC_CACHE_MAX_SIZE") == "3G");
    CHECK(settings->find("BEKC_CACHE_MAX_SIZE")->origin == "$BEKC_CACHE_MAX_SIZE");
}

TEST_CASE("settings: a file others can write sets only what anyone may set") {
    // A team cache is group-writable, and so is its bekc.conf: a member
    // could make every other user run a program (launcher), send their
    // token elsewhere (remote_cache) or write where the member chooses.
    test::TempDir dir;
    test::write_file(dir / "home/.config/bekc/bekc.conf",
                     "cache_dir = " + (dir / "c").string() + "\nlauncher = ccache\n");
    const fs::path team = dir / "c/bekc.conf";
    test::write_file(team,
                     "max_size = 2G\nlauncher = /tmp/evil\nremote_cache = http://evil/\n"
                     "log_file = /tmp/x.log\nbase_dir = /w\nremote_read_only = false\n");
    const std::map<std::string, std::string> env{{"HOME", (dir / "home").string()}};
    const std::string user = (dir / "home/.config/bekc/bekc.conf").string();

    SECTION("its own file, writable only by the user, sets everything") {
        ::chmod(team.c_str(), 0644);
        auto settings = load_settings(std::nullopt, env_of(env));
        REQUIRE(settings);
        CHECK(settings->warnings().empty());
        CHECK(settings->lookup()("BEKC_LAUNCHER") == "/tmp/evil");
    }
    for (mode_t mode : {mode_t{0664}, mode_t{0646}}) {
        ::chmod(team.c_str(), mode);
        auto settings = load_settings(std::nullopt, env_of(env));
        REQUIRE(settings);
        EnvLookup lookup = settings->lookup();
        CHECK(lookup("BEKC_CACHE_MAX_SIZE") == "2G");
        CHECK(lookup("BEKC_BASE_DIR") == "/w");
        CHECK(lookup("BEKC_LAUNCHER") == "ccache");  // the user's own, not the team's
        CHECK_FALSE(lookup("BEKC_REMOTE_CACHE"));
        CHECK_FALSE(lookup("BEKC_LOG"));
        CHECK_FALSE(lookup("BEKC_REMOTE_CACHE_READONLY"));
        REQUIRE(settings->warnings().size() == 4);
        const std::string who =
            mode == 0664 ? "is writable by its group" : "is writable by every user";
        CHECK(settings->warnings()[2] ==
              team.string() + ":2: warning: launcher ignored: this file " + who +
                  ", and a setting that runs a program, sends credentials or chooses where bekc "
                  "writes is read only from a file owned by you or root that no one else can "
                  "write; set it in " +
                  user + " or $BEKC_LAUNCHER (or make this file yours and chmod go-w it)");
        CHECK(settings->warnings()[0].starts_with(team.string() +
                                                  ":3: warning: remote_cache ignored"));
    }
    if (::geteuid() == 0) {
        ::chmod(team.c_str(), 0644);
        REQUIRE(::chown(team.c_str(), 65534, 65534) == 0);
        auto settings = load_settings(std::nullopt, env_of(env));
        REQUIRE(settings);
        CHECK(settings->lookup()("BEKC_LAUNCHER") == "ccache");
        REQUIRE_FALSE(settings->warnings().empty());
        CHECK(settings->warnings()[0].find("this file is owned by uid 65534") != std::string::npos);
    }
}

TEST_CASE("settings: $BEKC_CONFIG replaces the cache's file, and must exist") {
    test::TempDir dir;
    test::write_file(dir / "c/bekc.conf", "max_size = 2G\n");
    test::write_file(dir / "team.conf", "max_size = 7G\ncache_dir = c\n");
    std::map<std::string, std::string> env{{"HOME", (dir / "home").string()},
                                           {"BEKC_CONFIG", (dir / "team.conf").string()}};
    auto settings = load_settings(std::nullopt, env_of(env));
    REQUIRE(settings);
    CHECK(settings->lookup()("BEKC_CACHE_MAX_SIZE") == "7G");
    CHECK(settings->lookup()("BEKC_CACHE_DIR") == (dir / "c").string());
    CHECK(settings->places().front() == dir / "team.conf");

    env["BEKC_CONFIG"] = (dir / "missing.conf").string();
    auto missing = load_settings(std::nullopt, env_of(env));
    REQUIRE_FALSE(missing);
    CHECK(missing.error().at(0).find("missing.conf") != std::string::npos);
}

TEST_CASE("settings: --cache-dir picks the cache's file; cache_dir there is an error") {
    test::TempDir dir;
    test::write_file(dir / "flag/bekc.conf", "cache_dir = /elsewhere\n");
    auto settings = load_settings((dir / "flag").string(), env_of({{"HOME", "/nonexistent"}}));
    REQUIRE_FALSE(settings);
    CHECK(settings.error().at(0).starts_with((dir / "flag/bekc.conf").string() +
                                             ":1: error: cache_dir cannot be set in the cache's"));
}

TEST_CASE("settings: the user's file follows XDG_CONFIG_HOME only when absolute") {
    CHECK(user_config_path(env_of({{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}})) ==
          fs::path("/x/bekc/bekc.conf"));
    CHECK(user_config_path(env_of({{"XDG_CONFIG_HOME", "rel"}, {"HOME", "/h"}})) ==
          fs::path("/h/.config/bekc/bekc.conf"));
    CHECK_FALSE(user_config_path(env_of({})));
}

TEST_CASE("settings: a FIFO, a huge file or a directory in a config place is refused") {
    test::TempDir dir;
    fs::path conf = dir / "home/.config/bekc/bekc.conf";
    fs::create_directories(conf.parent_path());
    auto env = env_of({{"HOME", (dir / "home").string()}});
    SECTION("FIFO: refused without waiting for a writer") {
        REQUIRE(mkfifo(conf.c_str(), 0600) == 0);
    }
    SECTION("larger than the limit") {
        test::write_file(conf, std::string(kMaxConfigBytes + 1, '#'));
    }
    SECTION("a directory") {
        fs::create_directories(conf);
    }
    auto settings = load_settings(std::nullopt, env);
    REQUIRE_FALSE(settings);
    CHECK(settings.error().at(0).starts_with("bekc: error: cannot read " + conf.string()));
}

TEST_CASE("settings: a config file read through a link is used") {
    test::TempDir dir;
    test::write_file(dir / "real.conf", "max_size = 9G\n");
    fs::create_directories(dir / "home/.config/bekc");
    fs::create_symlink(dir / "real.conf", dir / "home/.config/bekc/bekc.conf");
    auto settings = load_settings(std::nullopt, env_of({{"HOME", (dir / "home").string()}}));
    REQUIRE(settings);
    CHECK(settings->lookup()("BEKC_CACHE_MAX_SIZE") == "9G");
}

TEST_CASE("build history: the changed key parts, shortened around the difference") {
    auto record = [](std::string sha, std::vector<std::string> argv) {
        return KeyBuilder("direct")
            .add("input.path", "/w/k.cpp")
            .add("input.sha256", sha)
            .add("step", "compile")
            .add_list("step.argv", argv)
            .add("step", "link")
            .add_list("step.argv", {"g++", "-shared"})
            .explain();
    };
    std::string a(64, 'a'), b = a;
    b[40] = 'b';
    auto changes = changed_parts(record(a, {"g++", "-O3"}), record(b, {"g++", "-O2", "-g"}), 32);
    REQUIRE(changes.size() == 4);
    CHECK(changes[0].part == "input.sha256");
    CHECK(changes[0].old_value == "..." + a.substr(32, 32));
    CHECK(changes[0].new_value == "..." + b.substr(32, 32));
    CHECK(changes[1].part == "step.argv");  // the list's length
    CHECK(changes[2].part == "step.argv[1]");
    CHECK(changes[2].old_value == "-O3");
    CHECK(changes[3].part == "step.argv[2]");
    CHECK(changes[3].old_value.empty());
    CHECK(changed_parts(record(a, {"g++"}), record(a, {"g++"})).empty());
    // A repeated label names its occurrence: the second step's argv.
    auto second = changed_parts(record(a, {"g++"}), KeyBuilder("direct")
                                                        .add("input.path", "/w/k.cpp")
                                                        .add("input.sha256", a)
                                                        .add("step", "compile")
                                                        .add_list("step.argv", {"g++"})
                                                        .add("step", "link")
                                                        .add_list("step.argv", {"ld", "-shared"})
                                                        .explain());
    REQUIRE(second.size() == 1);
    CHECK(second[0].part == "step.argv[0]#2");
}

TEST_CASE("build history: remembered per inputs, valid for verify") {
    test::TempDir dir;
    CacheDir cache(dir.path());
    std::string id = inputs_id("k", {"/w/k.cpp"});
    CHECK(id != inputs_id("k", {"/w/k2.cpp"}));
    CHECK(id != inputs_id("k2", {"/w/k.cpp"}));
    CHECK_FALSE(previous_record(cache, id));
    remember_record(cache, id, "1:a 1:b\n", previous_record(cache, id));
    CHECK(previous_record(cache, id) == "1:a 1:b\n");
    CHECK(history_file_is_valid(cache, CacheLayout::history_record(id)));
    test::write_file(dir / CacheLayout::history_record(id), "garbage");
    CHECK_FALSE(history_file_is_valid(cache, CacheLayout::history_record(id)));
    CHECK_FALSE(previous_record(cache, id));
}

TEST_CASE("stats: counters add up under concurrent builds and zero") {
    test::TempDir dir;
    CacheDir cache(dir.path());
    CHECK(read_counters(cache).misses == 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&cache, t] {
            for (int i = 0; i < 25; ++i)
                (void)count_build(cache, t % 2 ? BuildCount::Miss : BuildCount::LocalHit);
        });
    for (auto& t : threads) t.join();
    (void)count_build(cache, BuildCount::RemoteHit);
    (void)count_build(cache, BuildCount::Error);
    BuildCounters c = read_counters(cache);
    CHECK(c.local_hits == 50);
    CHECK(c.misses == 50);
    CHECK(c.remote_hits == 1);
    CHECK(c.errors == 1);
    REQUIRE(zero_counters(cache));
    c = read_counters(cache);
    CHECK(c.local_hits + c.misses + c.remote_hits + c.errors == 0);
    CHECK(c.zeroed_at > 0);
    test::write_file(dir / CacheLayout::stats_file(), "{not json");
    CHECK(read_counters(cache).local_hits == 0);
    CHECK(count_build(cache, BuildCount::Miss));
    CHECK(read_counters(cache).misses == 1);
}

TEST_CASE("stats: a build whose tally is due to fold does not wait for another's lock") {
    // An in-process lookup counts its hit while it holds Python's GIL: a fold
    // that waited for the lock would stall every thread of that program.
    test::TempDir dir;
    CacheDir cache(dir.path());
    REQUIRE(count_build(cache, BuildCount::LocalHit));
    test::write_file(dir / CacheLayout::stats_tally("local_hits"), std::string(4095, '+'));
    {
        auto held = FileLock::try_acquire(cache, CacheLayout::named_lock("stats"));
        REQUIRE(held);
        REQUIRE(count_build(cache, BuildCount::LocalHit));  // 4096 counts: due, not taken
        CHECK_FALSE(fs::exists(dir / CacheLayout::stats_file()));
        CHECK(read_counters(cache).local_hits == 4096);
    }
    REQUIRE(count_build(cache, BuildCount::LocalHit));  // the lock is free: it folds
    CHECK(fs::exists(dir / CacheLayout::stats_file()));
    CHECK(fs::file_size(dir / CacheLayout::stats_tally("local_hits")) == 0);
    CHECK(read_counters(cache).local_hits == 4097);
}
