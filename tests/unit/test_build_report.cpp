// What `bekc build` reports beyond the manifest (lib/driver/build_report):
// the hit and miss counters, why a build missed (the direct key's parts that
// changed since the last build of the same inputs), and the build log.
#include <catch2/catch.hpp>

#include <string>

#include "../helpers/env.hpp"
#include "../helpers/temp_dir.hpp"
#include "driver/build_report.hpp"
#include "store/cache.hpp"
#include "store/key.hpp"
#include "store/stats.hpp"

using namespace bekc;
using nlohmann::ordered_json;

namespace {

struct Fixture {
    test::TempDir tmp;
    fs::path cache_root;
    BuildOptions o;
    EnvLookup settings;

    Fixture() {
        cache_root = tmp / "cache";
        REQUIRE(Cache(cache_root).ensure_created().has_value());
        test::write_file(tmp / "k.cpp", "int x;\n");
        o.inputs = {(tmp / "k.cpp").string()};
        o.cache_dir = cache_root.string();
        settings = test::env_of({{"BEKC_LOG", (tmp / "build.log").string()}});
    }

    BuildCounters counters() const { return read_counters(Cache(cache_root).dir()); }
};

BuildResult miss(const std::string& opt) {
    BuildResult r;
    r.miss_reason = "no entry for the direct key";
    r.direct_key_record =
        KeyBuilder("direct").add("flags.opt", opt).add("input", "k.cpp").explain();
    return r;
}

}  // namespace

TEST_CASE("build report: hits and misses are counted in the cache", "[build_report]") {
    Fixture f;
    BuildResult hit;
    hit.cache_hit = true;
    BuildResult remote;
    remote.cache_hit = remote.remote_hit = true;
    CHECK(account_build(f.o, hit, f.settings).is_null());
    (void)account_build(f.o, remote, f.settings);
    (void)account_build(f.o, miss("2"), f.settings);
    account_failure(f.o, f.settings);
    BuildCounters c = f.counters();
    CHECK(c.local_hits == 1);
    CHECK(c.remote_hits == 1);
    CHECK(c.misses == 1);
    CHECK(c.errors == 1);
}

TEST_CASE("build report: a miss says which parts of the key changed since the last build",
          "[build_report]") {
    Fixture f;
    ordered_json first = account_build(f.o, miss("2"), f.settings);
    CHECK(first["reason"] == "no entry for the direct key");
    CHECK(first["previous_build"] == false);
    CHECK(first["changed"] == ordered_json::array());

    ordered_json second = account_build(f.o, miss("3"), f.settings);
    CHECK(second["previous_build"] == true);
    REQUIRE(second["changed"].size() == 1);
    CHECK(second["changed"][0]["part"] == "flags.opt");
    CHECK(second["changed"][0]["old"] == "2");
    CHECK(second["changed"][0]["new"] == "3");

    // --force with no other reason says so.
    BuildOptions forced = f.o;
    forced.force = true;
    BuildResult r = miss("3");
    r.miss_reason.clear();
    CHECK(account_build(forced, r, f.settings)["reason"] == "--force");
}

TEST_CASE("build report: no cache, no counting", "[build_report]") {
    test::TempDir tmp;
    BuildOptions o;
    o.inputs = {(tmp / "k.cpp").string()};
    o.cache_dir = (tmp / "not-a-cache").string();
    ordered_json why = account_build(o, miss("2"), test::env_of({}));
    CHECK(why["previous_build"] == false);
    CHECK_FALSE(fs::exists(tmp / "not-a-cache"));
}

TEST_CASE("build report: one JSON line per build in the log", "[build_report]") {
    Fixture f;
    BuildResult r = miss("2");
    r.manifest = "/c/m.json";
    r.direct_key = "abc";
    r.seconds_total = 1.5;
    CHECK(log_build(f.o, &r, nullptr, 0, 0, f.settings).has_value());
    CHECK(log_build(f.o, nullptr, nullptr, 3, 0.25, f.settings).has_value());
    std::string text = test::read_file(f.tmp / "build.log");
    auto newline = text.find('\n');
    REQUIRE(newline != std::string::npos);
    auto line1 = nlohmann::json::parse(text.substr(0, newline));
    auto line2 = nlohmann::json::parse(text.substr(newline + 1));
    CHECK(line1["module"] == "k");
    CHECK(line1["result"] == "miss");
    CHECK(line1["manifest"] == "/c/m.json");
    CHECK(line1["direct_key"] == "abc");
    CHECK(line1["seconds_total"] == 1.5);
    CHECK(line2["result"] == "error");
    CHECK(line2["exit_code"] == 3);
    CHECK(line2["seconds_total"] == 0.25);

    // A log that cannot be written: the problem comes back for a warning.
    auto bad = test::env_of({{"BEKC_LOG", (f.tmp / "no-dir/build.log").string()}});
    auto logged = log_build(f.o, &r, nullptr, 0, 0, bad);
    REQUIRE_FALSE(logged.has_value());
    CHECK(logged.error().message.find("no-dir/build.log") != std::string::npos);
}

TEST_CASE("waits for another machine's compile are counted, and zeroed with the rest",
          "[build_report]") {
    Fixture f;
    CacheDir dir = Cache(f.cache_root).dir();
    REQUIRE(count_remote_wait(dir, true, 1500, 4000));
    REQUIRE(count_remote_wait(dir, false, 300000, 0));
    // A line cut short by a crash counts for nothing.
    REQUIRE(dir.append(CacheLayout::stats_tally("remote_waits"), "1 12"));
    BuildCounters c = f.counters();
    CHECK(c.remote_waits == 2);
    CHECK(c.remote_waits_served == 1);
    CHECK(c.wait_ms == 301500);
    CHECK(c.saved_ms == 4000);
    REQUIRE(zero_counters(dir));
    c = f.counters();
    CHECK(c.remote_waits == 0);
    CHECK(c.wait_ms == 0);
    REQUIRE(count_remote_wait(dir, true, 10, 20));
    CHECK(f.counters().remote_waits_served == 1);
}
