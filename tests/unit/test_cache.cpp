#include <catch2/catch.hpp>

#include <fcntl.h>

#include <chrono>
#include <map>
#include <thread>

#include "../helpers/child.hpp"
#include "../helpers/fake_entry.hpp"
#include "../helpers/temp_dir.hpp"
#include "store/cache.hpp"
#include "store/lock.hpp"
#include "store/size.hpp"
#include "util/error.hpp"

using namespace bekc;
using namespace std::chrono_literals;
using test::fake_key;
using test::write_fake_entry;

namespace {

Builder fake_builder(const std::string& key, const std::string& name, const std::string& bytes,
                     int* calls = nullptr) {
    return [=](const fs::path& dir) -> std::expected<void, std::string> {
        if (calls) ++*calls;
        write_fake_entry(dir, key, name, bytes);
        return {};
    };
}

size_t count_children(const fs::path& dir) {
    std::error_code ec;
    size_t n = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
}

size_t count_entries(const fs::path& root) {
    size_t n = 0;
    std::error_code ec;
    for (fs::directory_iterator fan(root / "entries", ec), end; !ec && fan != end;
         fan.increment(ec)) {
        n += count_children(fan->path());
    }
    return n;
}

// Appends one line to `file` atomically, from any process.
void append_line(const fs::path& file, const std::string& line) {
    int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    [[maybe_unused]] ssize_t n = write(fd, line.data(), line.size());
    close(fd);
}

}  // namespace

// ---------------------------------------------------------------- locations

TEST_CASE("the default cache directory follows BEKC_CACHE_DIR, XDG, HOME", "[cache]") {
    std::map<std::string, std::string> env;
    EnvLookup lookup = [&](std::string_view name) -> std::optional<std::string> {
        auto it = env.find(std::string(name));
        return it == env.end() ? std::nullopt : std::optional(it->second);
    };
    REQUIRE_FALSE(default_cache_dir(lookup).has_value());
    CHECK_THAT(default_cache_dir(lookup).error(), Catch::Contains("--cache-dir"));
    env["HOME"] = "/home/u";
    CHECK(default_cache_dir(lookup).value() == "/home/u/.cache/bekc");
    env["XDG_CACHE_HOME"] = "relative/ignored";
    CHECK(default_cache_dir(lookup).value() == "/home/u/.cache/bekc");
    env["XDG_CACHE_HOME"] = "/xdg";
    CHECK(default_cache_dir(lookup).value() == "/xdg/bekc");
    env["BEKC_CACHE_DIR"] = "";
    CHECK(default_cache_dir(lookup).value() == "/xdg/bekc");
    env["BEKC_CACHE_DIR"] = "/shared/cache";
    CHECK(default_cache_dir(lookup).value() == "/shared/cache");
}

TEST_CASE("entries are fanned out by the first two hex digits of the key", "[cache]") {
    CacheLayout layout("/c");
    std::string key = fake_key("x");
    CHECK(layout.entry_dir(key) == fs::path("/c/entries") / key.substr(0, 2) / key.substr(2));
    CHECK(layout.lock_file(key).filename() == key.substr(2) + ".lock");
    CHECK(CacheLayout::key_of(layout.entry_dir(key)) == key);
    CHECK(CacheLayout::key_of(layout.lock_file(key)) == key);
    CHECK(CacheLayout::key_of("/c/entries/ab/not-a-key").empty());
    CHECK_THROWS_AS(layout.entry_dir("../../etc"), FatalError);
}

// ---------------------------------------------------------- publish, lookup

TEST_CASE("publish then lookup round-trips an entry", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("round trip");
    auto miss = cache.lookup(key);
    REQUIRE_FALSE(miss.has_value());
    CHECK(miss.error().kind == Miss::Kind::Absent);

    int calls = 0;
    auto built = cache.get_or_build(key, fake_builder(key, "kern", "ELF library bytes", &calls));
    REQUIRE(built.has_value());
    CHECK_FALSE(built->hit);
    CHECK(calls == 1);
    CHECK(built->entry.dir == cache.layout().entry_dir(key));
    CHECK(test::read_file(built->entry.library) == "ELF library bytes");
    CHECK(fs::exists(built->entry.manifest(true)));
    CHECK(built->entry.manifest(false).filename() == "manifest.no-cuda-graph.json");
    CHECK(fs::exists(built->entry.dir / "stamp.json"));
    CHECK(fs::exists(tmp / "cache" / "CACHEDIR.TAG"));
    CHECK(count_children(tmp / "cache" / "tmp") == 0);

    auto hit = cache.lookup(key);
    REQUIRE(hit.has_value());
    CHECK(hit->name == "kern");
    CHECK(hit->targets == 1);
    auto again = cache.get_or_build(key, fake_builder(key, "kern", "other", &calls));
    REQUIRE(again.has_value());
    CHECK(again->hit);
    CHECK(calls == 1);
}

TEST_CASE("readers never see an entry that is still being built", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    Cache reader(tmp / "cache");
    std::string key = fake_key("partial");
    std::optional<Miss> seen;
    auto built =
        cache.get_or_build(key, [&](const fs::path& dir) -> std::expected<void, std::string> {
            test::write_file(dir / "libk.so", "half");
            seen = reader.lookup(key).error();
            write_fake_entry(dir, key, "k", "whole");
            return {};
        });
    REQUIRE(built.has_value());
    REQUIRE(seen.has_value());
    CHECK(seen->kind == Miss::Kind::Absent);
}

TEST_CASE("a failing builder leaves nothing behind", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("fails");
    auto r = cache.get_or_build(key, [](const fs::path& dir) -> std::expected<void, std::string> {
        test::write_file(dir / "libk.so", "junk");
        return std::unexpected(std::string("kernels.cu:3: error: expected ';'"));
    });
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == CacheError::Kind::Builder);
    CHECK(r.error().message == "kernels.cu:3: error: expected ';'");
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
    CHECK(count_entries(tmp / "cache") == 0);

    auto wrong =
        cache.get_or_build(key, [&](const fs::path& dir) -> std::expected<void, std::string> {
            write_fake_entry(dir, key, "k", "bytes");
            test::write_file(dir / "libk.so", "other bytes");  // no longer matches the manifest
            return {};
        });
    REQUIRE_FALSE(wrong.has_value());
    CHECK_THAT(wrong.error().message, Catch::Contains("invalid cache entry"));
    CHECK(count_entries(tmp / "cache") == 0);

    auto throws = [](const fs::path& dir) -> std::expected<void, std::string> {
        test::write_file(dir / "libk.so", "junk");
        throw FatalError("nvcc not found", kExitToolchain);
    };
    CHECK_THROWS_AS(cache.get_or_build(key, throws), FatalError);
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
    CHECK(cache.get_or_build(key, fake_builder(key, "k", "bytes")).has_value());  // lock released
}

TEST_CASE("an entry published by someone else first wins", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("race");
    // As if another machine, without working locks, published meanwhile.
    auto r = cache.get_or_build(key, [&](const fs::path& dir) -> std::expected<void, std::string> {
        write_fake_entry(cache.layout().entry_dir(key), key, "k", "THEIRS");
        write_fake_entry(dir, key, "k", "OURS");
        return {};
    });
    REQUIRE(r.has_value());
    CHECK(test::read_file(r->entry.library) == "THEIRS");
    CHECK(count_children(tmp / "cache" / "tmp") == 0);

    // A corrupt competitor is replaced instead.
    std::string key2 = fake_key("race 2");
    auto r2 =
        cache.get_or_build(key2, [&](const fs::path& dir) -> std::expected<void, std::string> {
            test::write_file(cache.layout().entry_dir(key2) / "manifest.json", "{");
            write_fake_entry(dir, key2, "k", "OURS");
            return {};
        });
    REQUIRE(r2.has_value());
    CHECK(test::read_file(r2->entry.library) == "OURS");
}

// ------------------------------------------------------------- concurrency

TEST_CASE("eight processes building one key: one build, one entry, all succeed", "[cache]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache", builds = tmp / "builds.log", go = tmp / "go";
    std::string key = fake_key("eight");
    std::vector<pid_t> children;
    for (int i = 0; i < 8; ++i) {
        children.push_back(test::fork_child([&] {
            while (!fs::exists(go)) std::this_thread::sleep_for(1ms);
            Cache cache(root);
            auto r = cache.get_or_build(
                key, [&](const fs::path& dir) -> std::expected<void, std::string> {
                    append_line(builds, "built\n");
                    std::this_thread::sleep_for(200ms);
                    write_fake_entry(dir, key, "k", "the library");
                    return {};
                });
            if (!r || test::read_file(r->entry.library) != "the library") return 1;
            return r->hit ? 10 : 0;
        }));
    }
    test::write_file(go, "");
    int builders = 0;
    for (pid_t pid : children) {
        int code = test::wait_child(pid);
        CHECK((code == 0 || code == 10));
        builders += code == 0;
    }
    CHECK(builders == 1);
    CHECK(test::read_file(builds) == "built\n");
    CHECK(count_entries(root) == 1);
    CHECK(count_children(root / "tmp") == 0);
}

TEST_CASE("a builder waiting on a busy key gives up with a message naming the lock", "[cache]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    std::string key = fake_key("busy");
    Cache cache(root, CacheOptions{.lock_timeout = 300ms});
    test::ReadySignal ready;
    pid_t holder = test::fork_child([&] {
        auto lock = FileLock::acquire(cache.layout().lock_file(key), 5s);
        if (!lock) return 1;
        ready.notify();
        pause();
        return 0;
    });
    REQUIRE(ready.wait());
    auto r = cache.get_or_build(key, fake_builder(key, "k", "bytes"));
    kill(holder, SIGKILL);
    test::wait_child(holder);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == CacheError::Kind::LockTimeout);
    CHECK_THAT(r.error().message, Catch::Contains(cache.layout().lock_file(key).string()));
    CHECK_THAT(r.error().message, Catch::Contains("pid " + std::to_string(holder)));
}

TEST_CASE("a waiting builder uses the entry the lock holder published", "[cache]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    std::string key = fake_key("handover");
    test::ReadySignal ready;
    pid_t first = test::fork_child([&] {
        Cache cache(root);
        auto r =
            cache.get_or_build(key, [&](const fs::path& dir) -> std::expected<void, std::string> {
                ready.notify();
                std::this_thread::sleep_for(300ms);
                write_fake_entry(dir, key, "k", "from the first");
                return {};
            });
        return r ? 0 : 1;
    });
    REQUIRE(ready.wait());
    Cache cache(root);
    int calls = 0;
    auto r = cache.get_or_build(key, fake_builder(key, "k", "from the second", &calls));
    CHECK(test::wait_child(first) == 0);
    REQUIRE(r.has_value());
    CHECK(r->hit);
    CHECK(calls == 0);
    CHECK(test::read_file(r->entry.library) == "from the first");
}

TEST_CASE("a builder killed with SIGKILL blocks nobody and leaves only a temp dir", "[cache]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    std::string key = fake_key("killed");
    test::ReadySignal ready;
    pid_t victim = test::fork_child([&] {
        Cache cache(root);
        cache.get_or_build(key, [&](const fs::path& dir) -> std::expected<void, std::string> {
            test::write_file(dir / "libk.so", "half written");
            ready.notify();
            pause();
            return {};
        });
        return 0;
    });
    REQUIRE(ready.wait());
    kill(victim, SIGKILL);
    CHECK(test::wait_child(victim) == 128 + SIGKILL);
    CHECK(count_children(root / "tmp") == 1);

    Cache cache(root, CacheOptions{.lock_timeout = 2s});
    CHECK(cache.lookup(key).error().kind == Miss::Kind::Absent);
    auto start = std::chrono::steady_clock::now();
    auto r = cache.get_or_build(key, fake_builder(key, "k", "complete"));
    REQUIRE(r.has_value());
    CHECK_FALSE(r->hit);
    CHECK(std::chrono::steady_clock::now() - start < 1s);

    // Young staging directories are kept (another machine may own them)...
    CHECK(cache.verify().stale_temps_removed == 0);
    CHECK(count_children(root / "tmp") == 1);
    // ...old ones whose lock is free are removed.
    Cache sweeper(root, CacheOptions{.stale_temp_age = 0s});
    CHECK(sweeper.verify().stale_temps_removed == 1);
    CHECK(count_children(root / "tmp") == 0);
    CHECK(sweeper.lookup(key).has_value());
}

TEST_CASE("stale-temp cleanup spares directories whose build still holds the lock", "[cache]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    std::string key = fake_key("in progress");
    fs::path staging = root / "tmp" / (key + ".host.1.abc");
    fs::path trash = root / "tmp" / "trash.host.1.abc";
    fs::path scratch = root / "tmp" / "build.host.1.abc";
    test::write_file(staging / "libk.so", "x");
    test::write_file(trash / "old" / "libk.so", "x");
    test::write_file(scratch / "k.o", "x");

    CHECK(Cache(root).verify().stale_temps_removed == 0);  // all younger than an hour
    Cache cache(root, CacheOptions{.stale_temp_age = 0s});
    auto lock = FileLock::acquire(cache.layout().lock_file(key), 1s);
    REQUIRE(lock.has_value());
    CHECK(cache.verify().stale_temps_removed == 2);
    CHECK(fs::exists(staging));
    CHECK_FALSE(fs::exists(trash));
    CHECK_FALSE(fs::exists(scratch));
    lock->release();
    CHECK(cache.verify().stale_temps_removed == 1);
    CHECK_FALSE(fs::exists(staging));
}

// ---------------------------------------------------------------- integrity

TEST_CASE("a truncated library is detected, reported and removed", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("truncated");
    auto built = cache.get_or_build(key, fake_builder(key, "k", std::string(100000, 'x')));
    REQUIRE(built.has_value());
    fs::resize_file(built->entry.library, 1000);

    auto r = cache.lookup(key);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Miss::Kind::Corrupt);
    CHECK_THAT(r.error().reason, Catch::Contains("does not match library_sha256") &&
                                     Catch::Contains(built->entry.dir.string()));
    CHECK_FALSE(fs::exists(built->entry.dir));
    CHECK(cache.lookup(key).error().kind == Miss::Kind::Absent);
}

TEST_CASE("get_or_build rebuilds a corrupt entry and says why", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("rebuild");
    auto built = cache.get_or_build(key, fake_builder(key, "k", "good"));
    REQUIRE(built.has_value());
    fs::remove(built->entry.library);
    auto again = cache.get_or_build(key, fake_builder(key, "k", "good"));
    REQUIRE(again.has_value());
    CHECK_FALSE(again->hit);
    CHECK_THAT(again->repaired, Catch::Contains("library libk.so is missing"));
    CHECK(test::read_file(again->entry.library) == "good");
}

TEST_CASE("a bad manifest makes the entry corrupt", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    auto corrupt_with = [&](const std::string& seed, const std::string& file,
                            const std::string& text) {
        std::string key = fake_key(seed);
        auto built = cache.get_or_build(key, fake_builder(key, "k", "bytes"));
        REQUIRE(built.has_value());
        test::write_file(built->entry.dir / file, text);
        auto r = cache.lookup(key);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Miss::Kind::Corrupt);
        return r.error().reason;
    };
    CHECK_THAT(corrupt_with("a", "manifest.json", "{\"schema\": 1, "),
               Catch::Contains("manifest.json is not a JSON object"));
    CHECK_THAT(corrupt_with("b", "manifest.json", R"({"schema": 2})"),
               Catch::Contains("not schema 1"));
    CHECK_THAT(corrupt_with("c", "manifest.no-cuda-graph.json", "[]"),
               Catch::Contains("manifest.no-cuda-graph.json is not a JSON object"));
    CHECK_THAT(corrupt_with("d", "manifest.json",
                            R"({"schema": 1, "key": ")" + fake_key("d") +
                                R"(", "library": "../../evil.so", "library_sha256": ")" +
                                std::string(64, '0') + "\"}"),
               Catch::Contains("names no library file inside the entry"));
}

TEST_CASE("the cheap check catches same-size rewrites with the mtime put back", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("sneaky");
    auto built = cache.get_or_build(key, fake_builder(key, "k", "original bytes"));
    REQUIRE(built.has_value());
    int64_t mtime = test::mtime_ns(built->entry.library);
    test::write_file(built->entry.library, "modified bytes");
    test::set_mtime(built->entry.library, mtime);
    auto r = cache.lookup(key);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().reason, Catch::Contains("does not match"));
}

TEST_CASE("a touched but unchanged library still hits and refreshes the stamp", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("touched");
    auto built = cache.get_or_build(key, fake_builder(key, "k", "same bytes"));
    REQUIRE(built.has_value());
    int64_t later = test::mtime_ns(built->entry.library) + 5'000'000'000;
    test::set_mtime(built->entry.library, later);
    REQUIRE(cache.lookup(key).has_value());
    auto stamp = nlohmann::json::parse(test::read_file(built->entry.dir / "stamp.json"));
    CHECK(stamp["mtime_ns"] == later);
}

TEST_CASE("verify hashes every library and removes bad entries", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string good = fake_key("good"), bad = fake_key("bad");
    REQUIRE(cache.get_or_build(good, fake_builder(good, "g", "good bytes")).has_value());
    auto b = cache.get_or_build(bad, fake_builder(bad, "b", "bad bytes"));
    REQUIRE(b.has_value());
    // Same size, same mtime and a rewritten stamp: only a full hash can tell.
    int64_t mtime = test::mtime_ns(b->entry.library);
    test::write_file(b->entry.library, "BAD bytes");
    test::set_mtime(b->entry.library, mtime);
    std::filesystem::remove(b->entry.dir / "stamp.json");

    VerifyReport report = cache.verify();
    CHECK(report.checked == 2);
    REQUIRE(report.removed.size() == 1);
    CHECK(report.removed[0].first == bad);
    CHECK_THAT(report.removed[0].second, Catch::Contains("does not match"));
    CHECK(cache.lookup(good).has_value());
    CHECK(cache.lookup(bad).error().kind == Miss::Kind::Absent);
}

// ------------------------------------------------------------- direct mode

namespace {

struct DirectFixture {
    test::TempDir tmp;
    fs::path inc1 = tmp / "inc1", inc2 = tmp / "inc2";
    fs::path a = inc2 / "a.h", b = inc2 / "sub" / "b.h";
    std::string key = fake_key("full");
    std::string direct_key = fake_key("direct");

    DirectFixture() {
        test::write_file(a, "#define A 1\n");
        test::write_file(b, "#define B 2\n");
    }
    DirectInputs inputs() const {
        DirectInputs in{key, {{a, sha256_hex("#define A 1\n")}, {b, ""}}, {}};
        for (const auto& dep : {a, b}) {
            for (const auto& p : shadowing_paths({inc1, inc2}, dep)) in.must_not_exist.push_back(p);
        }
        return in;
    }
};

}  // namespace

TEST_CASE("direct mode: recorded dependencies give back the full key", "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache");
    CHECK(cache.lookup_direct(f.direct_key).why_not == "no direct-mode record");
    REQUIRE(cache.record_direct(f.direct_key, f.inputs()).has_value());
    DirectLookup hit = cache.lookup_direct(f.direct_key);
    REQUIRE(hit.key.has_value());
    CHECK(*hit.key == f.key);
    CHECK(hit.why_not.empty());
    // Just written, so within the racy window: hashed, not trusted by stat.
    CHECK(hit.rehashed == 2);
}

TEST_CASE("direct mode trusts an unchanged stat outside the racy window", "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache", CacheOptions{.racy_window = 0ns});
    REQUIRE(cache.record_direct(f.direct_key, f.inputs()).has_value());
    DirectLookup hit = cache.lookup_direct(f.direct_key);
    REQUIRE(hit.key.has_value());
    CHECK(hit.rehashed == 0);

    // Touched, same content: hashed once, then the record is refreshed.
    test::set_mtime(f.a, test::mtime_ns(f.a) - 10'000'000'000);
    DirectLookup touched = cache.lookup_direct(f.direct_key);
    CHECK(touched.key == f.key);
    CHECK(touched.rehashed == 1);
    DirectLookup after = cache.lookup_direct(f.direct_key);
    CHECK(after.key == f.key);
    CHECK(after.rehashed == 0);
}

TEST_CASE("direct mode misses on same-size content change with mtime put back", "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache", CacheOptions{.racy_window = 0ns});
    int64_t old = now_ns() - 3600'000'000'000;
    test::set_mtime(f.a, old);
    REQUIRE(cache.record_direct(f.direct_key, f.inputs()).has_value());
    test::write_file(f.a, "#define A 9\n");
    test::set_mtime(f.a, old);
    DirectLookup r = cache.lookup_direct(f.direct_key);
    CHECK_FALSE(r.key.has_value());
    CHECK(r.why_not == f.a.string() + " changed");
}

TEST_CASE("direct mode misses when a file is rewritten within the same second", "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache");
    REQUIRE(cache.record_direct(f.direct_key, f.inputs()).has_value());
    int64_t recorded = test::mtime_ns(f.b);
    test::write_file(f.b, "#define B 3\n");
    test::set_mtime(f.b, recorded);
    DirectLookup r = cache.lookup_direct(f.direct_key);
    CHECK_FALSE(r.key.has_value());
    CHECK(r.why_not == f.b.string() + " changed");
}

TEST_CASE("the racy rule: equal stats prove nothing close to the record's time", "[direct]") {
    const int64_t s = 1'000'000'000;
    FileStat st{100, 50 * s, 50 * s, true};
    CHECK_FALSE(must_rehash(st, st, 60 * s, 2s));
    CHECK(must_rehash(st, st, 50 * s + s / 2, 2s));  // same second as the record
    CHECK(must_rehash(st, st, 51 * s, 2s));          // within the window
    CHECK(must_rehash(st, st, 40 * s, 2s));          // newer than the record
    FileStat ctime_moved = st;
    ctime_moved.ctime_ns += 1;
    CHECK(must_rehash(st, ctime_moved, 60 * s, 2s));
    FileStat grown = st;
    grown.size += 1;
    CHECK(must_rehash(st, grown, 60 * s, 2s));
}

TEST_CASE("direct mode misses when a shadowing header appears", "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache");
    CHECK(shadowing_paths({f.inc1, f.inc2}, f.b) == std::vector<fs::path>{f.inc1 / "sub" / "b.h"});
    CHECK(shadowing_paths({f.inc1, f.inc2}, f.inc1 / "x.h").empty());
    CHECK(shadowing_paths({f.inc1, f.inc2}, f.tmp / "other" / "x.h").empty());
    REQUIRE(cache.record_direct(f.direct_key, f.inputs()).has_value());
    REQUIRE(cache.lookup_direct(f.direct_key).key.has_value());
    test::write_file(f.inc1 / "sub" / "b.h", "#define B 2\n");
    DirectLookup r = cache.lookup_direct(f.direct_key);
    CHECK_FALSE(r.key.has_value());
    CHECK_THAT(r.why_not,
               Catch::Contains((f.inc1 / "sub" / "b.h").string()) && Catch::Contains("now exists"));
}

TEST_CASE("direct mode refuses to record a header edited during the build", "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache");
    DirectInputs in = f.inputs();
    test::write_file(f.a, "#define A 7\n");  // after the key saw "#define A 1"
    auto r = cache.record_direct(f.direct_key, in);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error(), Catch::Contains("a.h changed during the build"));
    CHECK_FALSE(cache.lookup_direct(f.direct_key).key.has_value());
}

TEST_CASE("direct mode keeps a handful of records per direct key", "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache");
    for (int i = 0; i < 10; ++i) {
        std::string text = "#define A " + std::to_string(i) + "\n";
        test::write_file(f.a, text);
        DirectInputs in{fake_key("full " + std::to_string(i)), {{f.a, sha256_hex(text)}}, {}};
        REQUIRE(cache.record_direct(f.direct_key, in).has_value());
    }
    auto records = nlohmann::json::parse(test::read_file(cache.layout().direct_file(f.direct_key)));
    CHECK(records["records"].size() == kMaxDirectRecords);
    test::write_file(f.a, "#define A 5\n");
    CHECK(cache.lookup_direct(f.direct_key).key == fake_key("full 5"));
    test::write_file(f.a, "#define A 0\n");  // the oldest, dropped
    CHECK_FALSE(cache.lookup_direct(f.direct_key).key.has_value());
}

// ------------------------------------------------------- list, clear, prune

TEST_CASE("prune removes least recently used entries first", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::vector<std::string> keys;
    for (std::string seed : {"a", "b", "c"}) {
        keys.push_back(fake_key(seed));
        REQUIRE(
            cache.get_or_build(keys.back(), fake_builder(keys.back(), seed, std::string(5000, 'x')))
                .has_value());
    }
    int64_t now = now_ns();
    for (int i = 0; i < 3; ++i) {
        test::set_mtime(cache.layout().entry_dir(keys[i]) / "last-use",
                        now - (300 - 100 * i) * 1'000'000'000LL);
    }
    REQUIRE(cache.lookup(keys[0]).has_value());  // a hit makes "a" the newest

    CacheStats before = cache.stats();
    CHECK(before.entries == 3);
    PruneReport report = cache.prune(before.bytes - 1);
    CHECK(report.entries_removed == 1);
    CHECK(report.bytes_before == before.bytes);
    CHECK(report.bytes_after < before.bytes);
    CHECK(cache.lookup(keys[1]).error().kind == Miss::Kind::Absent);  // "b" was oldest
    CHECK(cache.lookup(keys[0]).has_value());
    CHECK(cache.lookup(keys[2]).has_value());

    CHECK(cache.prune(0).entries_removed == 2);
    CHECK(cache.stats().entries == 0);
}

TEST_CASE("list and clear work by manifest name", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string k1 = fake_key("1"), k2 = fake_key("2"), k3 = fake_key("3");
    REQUIRE(cache.get_or_build(k1, fake_builder(k1, "alpha", "one")).has_value());
    REQUIRE(cache.get_or_build(k2, fake_builder(k2, "alpha", "two")).has_value());
    REQUIRE(cache.get_or_build(k3, fake_builder(k3, "beta", "three")).has_value());
    test::set_mtime(cache.layout().entry_dir(k3) / "last-use", now_ns() + 1'000'000'000);

    auto entries = cache.list();
    REQUIRE(entries.size() == 3);
    CHECK(entries[0].key == k3);  // newest first
    CHECK(entries[0].name == "beta");
    CHECK(entries[0].targets == 1);
    CHECK(entries[0].bytes > 5);
    CHECK(entries[0].problem.empty());

    CHECK(cache.clear("alpha") == 2);
    REQUIRE(cache.list().size() == 1);
    CHECK(cache.list()[0].name == "beta");

    std::string dk = fake_key("direct");
    test::write_file(tmp / "h.h", "x");
    REQUIRE(cache.record_direct(dk, DirectInputs{k3, {{tmp / "h.h", ""}}, {}}).has_value());
    CHECK(cache.stats().direct_records == 1);
    CHECK(cache.clear() == 1);
    CacheStats stats = cache.stats();
    CHECK(stats.entries == 0);
    CHECK(stats.direct_records == 0);
    CHECK(stats.bytes == 0);
    CHECK(count_children(tmp / "cache" / "locks" / k3.substr(0, 2)) == 0);
}

// ------------------------------------------------------------------- sizes

TEST_CASE("sizes parse with decimal and binary units", "[cache][size]") {
    CHECK(parse_size("500M").value() == 500'000'000);
    CHECK(parse_size("2G").value() == 2'000'000'000);
    CHECK(parse_size("1.5GiB").value() == 1'610'612'736);
    CHECK(parse_size("100KB").value() == 100'000);
    CHECK(parse_size("4096").value() == 4096);
    CHECK(parse_size("1kib").value() == 1024);
    CHECK(parse_size("2 Mi").value() == 2 * 1024 * 1024);
    CHECK(parse_size("1T").value() == 1'000'000'000'000);
    CHECK(parse_size("0").value() == 0);
    for (const char* bad : {"", "M", "abc", "-5M", "5X", "1e3", "5 M B", "nan", "99999999999T"}) {
        INFO(bad);
        REQUIRE_FALSE(parse_size(bad).has_value());
        CHECK_THAT(parse_size(bad).error(), Catch::Contains("500M, 2G, 1.5GiB or 100KB"));
    }
}

TEST_CASE("sizes format for people", "[cache][size]") {
    CHECK(format_size(0) == "0 B");
    CHECK(format_size(999) == "999 B");
    CHECK(format_size(1500) == "1.5 kB");
    CHECK(format_size(2'000'000'000) == "2.0 GB");
}
