#include <catch2/catch.hpp>

#include <fcntl.h>

#include <cctype>
#include <chrono>
#include <map>
#include <thread>

#include "../helpers/child.hpp"
#include "../helpers/fake_entry.hpp"
#include "../helpers/temp_dir.hpp"
#include "store/cache.hpp"
#include "store/direct_record.hpp"
#include "store/hash.hpp"
#include "store/lock.hpp"
#include "store/size.hpp"
#include "util/error.hpp"

using namespace bekc;
using namespace std::chrono_literals;
using test::fake_key;
using test::write_fake_entry;

namespace {

using StagingResult = std::expected<void, Error>;

Builder fake_builder(const std::string& key, const std::string& name, const std::string& bytes,
                     int* calls = nullptr) {
    return [=](const Staging& staging) -> StagingResult {
        if (calls) ++*calls;
        write_fake_entry(staging, key, name, bytes);
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

// Absolute paths of an entry's directory and its last-use file.
fs::path entry_dir(const Cache& cache, const std::string& key) {
    return cache.layout().path(CacheLayout::entry(key));
}
fs::path last_use(const Cache& cache, const std::string& key) {
    return entry_dir(cache, key) / kLastUseFile;
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
    CHECK_THAT(default_cache_dir(lookup).error().message, Catch::Contains("--cache-dir"));
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
    fs::path entry = CacheLayout::entry(key);
    CHECK(entry == fs::path("entries") / key.substr(0, 2) / key.substr(2));
    CHECK(layout.path(entry) == fs::path("/c/entries") / key.substr(0, 2) / key.substr(2));
    fs::path lock = CacheLayout::lock(key);
    CHECK(lock == fs::path("locks") / key.substr(0, 2) / (key.substr(2) + ".lock"));
    CHECK(CacheLayout::direct_record(key) ==
          fs::path("direct") / key.substr(0, 2) / (key.substr(2) + ".rec"));
    CHECK(CacheLayout::key_of(key.substr(0, 2), key.substr(2), "") == key);
    CHECK(CacheLayout::key_of(key.substr(0, 2), key.substr(2) + ".lock", ".lock") == key);
    CHECK(CacheLayout::key_of("ab", "not-a-key", "").empty());
    CHECK_THROWS_AS(CacheLayout::entry("../../etc"), InternalError);
    CHECK_THROWS_AS(CacheLayout::lock(key.substr(1)), InternalError);
    CHECK_THROWS_AS(CacheLayout::direct_record(""), InternalError);
}

TEST_CASE("the layout tells bekc's own names from foreign ones", "[cache]") {
    std::string key = fake_key("names");
    std::string suffix = unique_suffix();

    SECTION("temporaries in tmp/") {
        for (const fs::path& staging : {CacheLayout::staging(key), CacheLayout::staging("runtime"),
                                        CacheLayout::staging("scratch"), CacheLayout::trash()}) {
            INFO(staging);
            CHECK(staging.parent_path() == CacheLayout::tmp());
            CHECK(CacheLayout::is_own_temp(staging.filename().string()));
        }
        CHECK(CacheLayout::is_own_temp(key + ".host.12.0123456789abcdef"));
        CHECK(CacheLayout::is_own_temp("trash." + suffix));
        for (const std::string& foreign : std::vector<std::string>{
                 "notes.txt", "trash", "abc.def", key + ".host.12.zzzz", key, "trash.",
                 "build." + suffix, "Trash." + suffix, key.substr(1) + "." + suffix,
                 key + ".host.pid.0123456789abcdef", key + ".12.0123456789abcdef",
                 "scratch.host.12.0123456789ABCDEF", "", ".", ".."}) {
            INFO(foreign);
            CHECK_FALSE(CacheLayout::is_own_temp(foreign));
            CHECK(CacheLayout::staging_key(foreign).empty());
        }
    }
    SECTION("the key a staging directory belongs to") {
        CHECK(CacheLayout::staging_key(CacheLayout::staging(key).filename().string()) == key);
        CHECK(CacheLayout::staging_key(key + ".host.12.0123456789abcdef") == key);
        CHECK(CacheLayout::staging_key(CacheLayout::trash().filename().string()).empty());
        CHECK(CacheLayout::staging_key("runtime." + suffix).empty());
        CHECK(CacheLayout::staging_key("scratch." + suffix).empty());
    }
    SECTION("keyed names under entries/, locks/ and direct/") {
        std::string fan = key.substr(0, 2), rest = key.substr(2);
        CHECK(CacheLayout::key_of(fan, rest, "") == key);
        CHECK(CacheLayout::key_of(fan, rest + ".json", ".json") == key);
        CHECK(CacheLayout::key_of(fan, rest + ".lock", ".lock") == key);
        CHECK(CacheLayout::key_of(fan, rest + ".lock", ".json").empty());
        CHECK(CacheLayout::key_of(fan, rest + ".json", "").empty());
        CHECK(CacheLayout::key_of(fan, rest.substr(1), "").empty());
        CHECK(CacheLayout::key_of(key.substr(0, 3), rest.substr(1), "").empty());
        CHECK(CacheLayout::key_of(fan, rest + ".lock.tmp." + suffix, ".lock").empty());
        std::string upper = rest;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (upper != rest) CHECK(CacheLayout::key_of(fan, upper, "").empty());
        for (std::string foreign : {"notes.txt", "trash", "abc.def", ".lock", ""}) {
            INFO(foreign);
            CHECK(CacheLayout::key_of(fan, foreign, "").empty());
            CHECK(CacheLayout::key_of(fan, foreign, ".lock").empty());
        }
    }
    SECTION("write_atomic temporaries") {
        CHECK(CacheLayout::is_write_temp("stamp.json.tmp." + suffix));
        CHECK_FALSE(CacheLayout::is_write_temp(".tmp." + suffix));
        CHECK_FALSE(CacheLayout::is_write_temp("notes.tmp.txt"));
        CHECK_FALSE(CacheLayout::is_write_temp("notes.txt"));
    }
}

// ---------------------------------------------------------- publish, lookup

TEST_CASE("publish then lookup round-trips an entry", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("round trip");
    auto miss = cache.lookup(key);
    REQUIRE_FALSE(miss.has_value());
    CHECK(miss.error().kind == Miss::Kind::Absent);
    CHECK_FALSE(fs::exists(tmp / "cache"));  // a lookup creates nothing

    int calls = 0;
    auto built = cache.get_or_build(key, fake_builder(key, "kern", "ELF library bytes", &calls));
    REQUIRE(built.has_value());
    CHECK_FALSE(built->hit);
    CHECK_FALSE(built->replaced_sha256.has_value());
    CHECK(calls == 1);
    CHECK(built->entry.dir == entry_dir(cache, key));
    CHECK(built->entry.library == entry_dir(cache, key) / "libkern.so");
    CHECK(test::read_file(built->entry.library) == "ELF library bytes");
    CHECK(fs::exists(built->entry.manifest(true)));
    CHECK(built->entry.manifest(false).filename() == "manifest.no-cuda-graph.json");
    CHECK(fs::exists(built->entry.dir / "stamp.json"));
    CHECK(fs::exists(built->entry.dir / "last-use"));
    CHECK(fs::exists(tmp / "cache" / "CACHEDIR.TAG"));
    CHECK(fs::exists(tmp / "cache" / "bekc-cache.json"));
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

TEST_CASE("the builder writes into its staging directory under tmp/", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("staging");
    test::TempDir outside;
    auto built = cache.get_or_build(key, [&](const Staging& staging) -> StagingResult {
        CHECK(staging.path().is_absolute());
        CHECK(staging.path() == cache.layout().path(staging.rel()));
        CHECK(staging.rel().parent_path() == CacheLayout::tmp());
        CHECK(CacheLayout::staging_key(staging.rel().filename().string()) == key);
        CHECK(fs::is_directory(staging.path()));
        // Written elsewhere (as a compiler does, in a private directory), then
        // moved in; the manifests are written last.
        test::write_file(outside / "out.so", "moved bytes");
        if (auto m = staging.move_in("libk.so", outside / "out.so"); !m)
            return std::unexpected(m.error());
        CHECK_FALSE(fs::exists(outside / "out.so"));
        for (const auto& [file, content] : test::fake_entry_files(key, "k", "moved bytes")) {
            if (file == "libk.so") continue;
            if (auto w = staging.write(file, content); !w) return std::unexpected(w.error());
        }
        auto missing = staging.move_in("other.so", outside / "missing.so");
        CHECK_FALSE(missing.has_value());
        return {};
    });
    REQUIRE(built.has_value());
    CHECK(test::read_file(built->entry.library) == "moved bytes");
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
}

TEST_CASE("readers never see an entry that is still being built", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    Cache reader(tmp / "cache");
    std::string key = fake_key("partial");
    std::optional<Miss> seen;
    auto built = cache.get_or_build(key, [&](const Staging& staging) -> StagingResult {
        test::write_file(staging.path() / "libk.so", "half");
        seen = reader.lookup(key).error();
        write_fake_entry(staging, key, "k", "whole");
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
    auto r = cache.get_or_build(key, [](const Staging& staging) -> StagingResult {
        test::write_file(staging.path() / "libk.so", "junk");
        return fail(ErrorKind::Cache, "kernels.cu:3: error: expected ';'");
    });
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "kernels.cu:3: error: expected ';'");
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
    CHECK(count_entries(tmp / "cache") == 0);

    auto wrong = cache.get_or_build(key, [&](const Staging& staging) -> StagingResult {
        write_fake_entry(staging, key, "k", "bytes");
        // No longer matches the manifest.
        test::write_file(staging.path() / "libk.so", "other bytes");
        return {};
    });
    REQUIRE_FALSE(wrong.has_value());
    CHECK(wrong.error().kind == ErrorKind::Cache);
    CHECK_THAT(wrong.error().message,
               Catch::StartsWith("the build left an invalid cache entry: ") &&
                   Catch::Contains("library_sha256"));
    CHECK(count_entries(tmp / "cache") == 0);
    CHECK(count_children(tmp / "cache" / "tmp") == 0);

    // A link in the staging directory is refused, never sealed.
    test::write_file(tmp / "elsewhere.so", "bytes");
    auto linked = cache.get_or_build(key, [&](const Staging& staging) -> StagingResult {
        write_fake_entry(staging, key, "k", "bytes");
        fs::create_symlink(tmp / "elsewhere.so", staging.path() / "extra.so");
        return {};
    });
    REQUIRE_FALSE(linked.has_value());
    CHECK_THAT(linked.error().message, Catch::Contains("extra.so is not a regular file"));
    CHECK(count_entries(tmp / "cache") == 0);
    CHECK(test::read_file(tmp / "elsewhere.so") == "bytes");

    auto throws = [](const Staging& staging) -> StagingResult {
        test::write_file(staging.path() / "libk.so", "junk");
        throw FatalError(Error::make(ErrorKind::Toolchain, "nvcc not found"));
    };
    CHECK_THROWS_AS(cache.get_or_build(key, throws), FatalError);
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
    CHECK(cache.get_or_build(key, fake_builder(key, "k", "bytes")).has_value());  // lock released
}

TEST_CASE("a builder's error reaches the caller whole: kind, file, line and notes", "[cache]") {
    // get_or_build and ensure_tree hand back the Error their builder
    // returned, as it is, so the user sees where it happened and how to fix it.
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    const Error failure =
        Error::at(ErrorKind::Toolchain, "kernels.cu", 3, "the compiler stopped").note("try -v");
    auto builder = [&](const Staging&) -> StagingResult { return std::unexpected(failure); };
    auto check_whole = [&](const Error& e) {
        CHECK(e.kind == ErrorKind::Toolchain);
        CHECK(e.file == "kernels.cu");
        CHECK(e.line == 3);
        CHECK(e.message == "the compiler stopped");
        CHECK(e.notes == std::vector<std::string>{"try -v"});
        CHECK(e.render() == "kernels.cu:3: error: the compiler stopped\nnote: try -v");
    };
    auto entry = cache.get_or_build(fake_key("whole"), builder);
    REQUIRE_FALSE(entry.has_value());
    check_whole(entry.error());
    auto tree = cache.ensure_tree(CacheLayout::step(fake_key("whole")),
                                  CacheLayout::lock(fake_key("whole")), builder);
    REQUIRE_FALSE(tree.has_value());
    check_whole(tree.error());
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
}

TEST_CASE("an entry published by someone else first wins", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("race");
    // As if another machine, without working locks, published meanwhile.
    auto r = cache.get_or_build(key, [&](const Staging& staging) -> StagingResult {
        write_fake_entry(entry_dir(cache, key), key, "k", "THEIRS");
        write_fake_entry(staging, key, "k", "OURS");
        return {};
    });
    REQUIRE(r.has_value());
    CHECK(test::read_file(r->entry.library) == "THEIRS");
    CHECK(count_children(tmp / "cache" / "tmp") == 0);

    // A corrupt competitor is replaced instead.
    std::string key2 = fake_key("race 2");
    auto r2 = cache.get_or_build(key2, [&](const Staging& staging) -> StagingResult {
        test::write_file(entry_dir(cache, key2) / "manifest.json", "{");
        write_fake_entry(staging, key2, "k", "OURS");
        return {};
    });
    REQUIRE(r2.has_value());
    CHECK(test::read_file(r2->entry.library) == "OURS");
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
}

TEST_CASE("get_or_build with replace rebuilds an existing entry", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("replace");
    int calls = 0;

    // Nothing to replace yet: an ordinary build.
    auto first = cache.get_or_build(key, fake_builder(key, "k", "version 1", &calls), true);
    REQUIRE(first.has_value());
    CHECK_FALSE(first->hit);
    CHECK_FALSE(first->replaced_sha256.has_value());

    auto second = cache.get_or_build(key, fake_builder(key, "k", "version 2", &calls), true);
    REQUIRE(second.has_value());
    CHECK_FALSE(second->hit);
    CHECK(calls == 2);
    REQUIRE(second->replaced_sha256.has_value());
    CHECK(*second->replaced_sha256 == sha256_hex("version 1"));
    CHECK(second->repaired.empty());
    CHECK(test::read_file(second->entry.library) == "version 2");
    CHECK(count_entries(tmp / "cache") == 1);
    CHECK(count_children(tmp / "cache" / "tmp") == 0);

    auto hit = cache.get_or_build(key, fake_builder(key, "k", "version 3", &calls));
    REQUIRE(hit.has_value());
    CHECK(hit->hit);
    CHECK(calls == 2);
    CHECK(test::read_file(hit->entry.library) == "version 2");

    // A failed replacement keeps the entry there was.
    auto failed = cache.get_or_build(
        key, [](const Staging&) -> StagingResult { return fail(ErrorKind::Cache, "no"); }, true);
    REQUIRE_FALSE(failed.has_value());
    CHECK(test::read_file(entry_dir(cache, key) / "libk.so") == "version 2");
    CHECK(cache.lookup(key).has_value());
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
            auto r = cache.get_or_build(key, [&](const Staging& staging) -> StagingResult {
                append_line(builds, "built\n");
                std::this_thread::sleep_for(200ms);
                write_fake_entry(staging, key, "k", "the library");
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
    REQUIRE(cache.ensure_created());  // the holder takes the lock as a build would, after it
    test::ReadySignal ready;
    pid_t holder = test::fork_child([&] {
        auto lock = FileLock::acquire(cache.dir(), CacheLayout::lock(key), 5s);
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
    CHECK(r.error().kind == ErrorKind::Cache);
    CHECK_THAT(r.error().message, Catch::StartsWith("gave up after 0.3 s waiting"));
    CHECK_THAT(r.error().message,
               Catch::Contains(cache.layout().path(CacheLayout::lock(key)).string()));
    CHECK_THAT(r.error().message, Catch::Contains("pid " + std::to_string(holder)));
}

TEST_CASE("a waiting builder uses the entry the lock holder published", "[cache]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    std::string key = fake_key("handover");
    test::ReadySignal ready;
    pid_t first = test::fork_child([&] {
        Cache cache(root);
        auto r = cache.get_or_build(key, [&](const Staging& staging) -> StagingResult {
            ready.notify();
            std::this_thread::sleep_for(300ms);
            write_fake_entry(staging, key, "k", "from the first");
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
        (void)cache.get_or_build(key, [&](const Staging& staging) -> StagingResult {
            test::write_file(staging.path() / "libk.so", "half written");
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
    CHECK(cache.verify().value().stale_temps_removed == 0);
    CHECK(count_children(root / "tmp") == 1);
    // ...old ones whose lock is free are removed.
    Cache sweeper(root, CacheOptions{.stale_temp_age = 0s});
    CHECK(sweeper.verify().value().stale_temps_removed == 1);
    CHECK(count_children(root / "tmp") == 0);
    CHECK(sweeper.lookup(key).has_value());
}

TEST_CASE("stale-temp cleanup spares live builds and names that are not bekc's", "[cache]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    REQUIRE(Cache(root).ensure_created().has_value());  // maintenance needs the marker
    std::string key = fake_key("in progress");
    std::string suffix = "host.1.0123456789abcdef";
    fs::path staging = root / "tmp" / (key + "." + suffix);
    fs::path trash = root / "tmp" / ("trash." + suffix);
    fs::path scratch = root / "tmp" / ("scratch." + suffix);
    fs::path runtime = root / "tmp" / ("runtime." + suffix);
    test::write_file(staging / "libk.so", "x");
    test::write_file(trash / "old" / "libk.so", "x");
    test::write_file(scratch / "k.o", "x");
    test::write_file(runtime / "include" / "bekc.h", "x");
    // Not bekc's names: never removed, however old.
    test::write_file(root / "tmp" / "notes.txt", "mine");
    test::write_file(root / "tmp" / "build.host.1.abc" / "k.o", "mine");
    test::write_file(root / "tmp" / (key + ".host.12.zzzz") / "k.o", "mine");

    CHECK(Cache(root).verify().value().stale_temps_removed == 0);  // all younger than an hour
    Cache cache(root, CacheOptions{.stale_temp_age = 0s});
    auto lock = FileLock::acquire(cache.dir(), CacheLayout::lock(key), 1s);
    REQUIRE(lock.has_value());
    CHECK(cache.verify().value().stale_temps_removed == 3);
    CHECK(fs::exists(staging));
    CHECK_FALSE(fs::exists(trash));
    CHECK_FALSE(fs::exists(scratch));
    CHECK_FALSE(fs::exists(runtime));
    lock->release();
    CHECK(cache.verify().value().stale_temps_removed == 1);
    CHECK_FALSE(fs::exists(staging));
    CHECK(test::read_file(root / "tmp" / "notes.txt") == "mine");
    CHECK(fs::exists(root / "tmp" / "build.host.1.abc" / "k.o"));
    CHECK(fs::exists(root / "tmp" / (key + ".host.12.zzzz") / "k.o"));
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
    // The seal knows the size: no hashing needed to tell.
    CHECK_THAT(r.error().reason, Catch::Contains("library libk.so has 1000 bytes, not 100000") &&
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
    // Rewrites `file` in a fresh entry; with `reseal` the seal is made to
    // agree, so what is checked is the manifest itself.
    auto corrupt_with = [&](const std::string& seed, const std::string& file,
                            const std::string& text, bool reseal) {
        std::string key = fake_key(seed);
        auto built = cache.get_or_build(key, fake_builder(key, "k", "bytes"));
        REQUIRE(built.has_value());
        test::write_file(built->entry.dir / file, text);
        if (reseal) REQUIRE(seal_dir(cache.dir(), CacheLayout::entry(key), "libk.so"));
        auto r = cache.lookup(key);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Miss::Kind::Corrupt);
        CHECK_FALSE(fs::exists(built->entry.dir));
        return r.error().reason;
    };
    // The seal catches any edit first.
    CHECK_THAT(corrupt_with("edited", "manifest.json", "{\"schema\": 1, ", false),
               Catch::Contains("manifest.json was modified after publishing"));
    CHECK_THAT(corrupt_with("edited deps", "dependencies.json", "{\"headers\": [1]}", false),
               Catch::Contains("dependencies.json was modified after publishing"));
    // Manifests that are sealed as they are must still make sense.
    CHECK_THAT(corrupt_with("a", "manifest.json", "{\"schema\": 1, ", true),
               Catch::Contains("manifest.json is not a JSON object"));
    CHECK_THAT(corrupt_with("b", "manifest.json", R"({"schema": 2})", true),
               Catch::Contains("not schema 1"));
    CHECK_THAT(corrupt_with("c", "manifest.no-cuda-graph.json", "[]", true),
               Catch::Contains("manifest.no-cuda-graph.json is not a JSON object"));
    CHECK_THAT(corrupt_with("d", "manifest.json",
                            R"({"schema": 1, "key": ")" + fake_key("d") +
                                R"(", "library": "../../evil.so", "library_sha256": ")" +
                                std::string(64, '0') + "\"}",
                            true),
               Catch::Contains("names no library file inside the entry"));
    CHECK_THAT(corrupt_with("e", "manifest.json",
                            R"({"schema": 1, "key": ")" + fake_key("other") +
                                R"(", "library": "libk.so", "library_sha256": ")" +
                                sha256_hex("bytes") + "\"}",
                            true),
               Catch::Contains("manifest.json is for another key"));
    CHECK_THAT(corrupt_with("f", "manifest.json",
                            R"({"schema": 1, "key": ")" + fake_key("f") +
                                R"(", "library": "libk.so", "library_sha256": ")" +
                                std::string(64, '0') + "\"}",
                            true),
               Catch::Contains("name different libraries"));
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
    CHECK_THAT(r.error().reason, Catch::Contains("library libk.so does not match its SHA-256"));
}

TEST_CASE("a touched but unchanged library still hits and refreshes the stamp", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("touched");
    auto built = cache.get_or_build(key, fake_builder(key, "k", "same bytes"));
    REQUIRE(built.has_value());

    // stamp.json: {"seal": 1, "files": {...}, "library": {...}}
    auto stamp = nlohmann::json::parse(test::read_file(built->entry.dir / "stamp.json"));
    CHECK(stamp["seal"] == 1);
    CHECK(stamp["files"].size() == 4);
    CHECK(stamp["files"]["libk.so"]["size"] == 10);
    CHECK(stamp["files"]["libk.so"]["sha256"] == sha256_hex("same bytes"));
    CHECK(stamp["files"].contains("manifest.json"));
    CHECK(stamp["files"].contains("manifest.no-cuda-graph.json"));
    CHECK(stamp["files"].contains("dependencies.json"));
    CHECK_FALSE(stamp["files"].contains("last-use"));
    CHECK(stamp["library"]["name"] == "libk.so");
    CHECK(stamp["library"]["xxh128"] == xxh128_hex("same bytes"));
    CHECK(stamp["library"]["mtime_ns"] == test::mtime_ns(built->entry.library));

    int64_t later = test::mtime_ns(built->entry.library) + 5'000'000'000;
    test::set_mtime(built->entry.library, later);
    REQUIRE(cache.lookup(key).has_value());
    stamp = nlohmann::json::parse(test::read_file(built->entry.dir / "stamp.json"));
    CHECK(stamp["library"]["mtime_ns"] == later);
    CHECK(stamp["files"]["libk.so"]["sha256"] == sha256_hex("same bytes"));
}

TEST_CASE("verify hashes every file and removes bad entries", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string good = fake_key("good"), bad = fake_key("bad"), unsealed = fake_key("unsealed");
    REQUIRE(cache.get_or_build(good, fake_builder(good, "g", "good bytes")).has_value());
    auto b = cache.get_or_build(bad, fake_builder(bad, "b", "bad bytes"));
    REQUIRE(b.has_value());
    auto u = cache.get_or_build(unsealed, fake_builder(unsealed, "u", "old bytes"));
    REQUIRE(u.has_value());

    // Same size, and the library's stamp made to agree with its new stat and
    // XXH3: a hit trusts it, only the SHA-256 of verify can tell.
    test::write_file(b->entry.library, "BAD bytes");
    fs::path bad_rel = CacheLayout::entry(bad);
    auto seal = Seal::read(cache.dir(), bad_rel);
    REQUIRE(seal.has_value());
    seal->library->stat = cache.dir().stat(bad_rel / "libb.so")->file;
    seal->library->xxh128 = xxh128_hex("BAD bytes");
    REQUIRE(seal->write(cache.dir(), bad_rel).has_value());
    REQUIRE(cache.lookup(bad).has_value());

    // An entry without a seal (an older bekc's) is checked against its
    // manifest's library_sha256.
    int64_t mtime = test::mtime_ns(u->entry.library);
    test::write_file(u->entry.library, "OLD bytes");
    test::set_mtime(u->entry.library, mtime);
    fs::remove(u->entry.dir / "stamp.json");

    auto report = cache.verify();
    REQUIRE(report.has_value());
    CHECK(report->checked == 3);
    REQUIRE(report->removed.size() == 2);
    std::map<std::string, std::string> removed(report->removed.begin(), report->removed.end());
    REQUIRE(removed.count("entry " + bad));
    CHECK_THAT(removed["entry " + bad],
               Catch::Contains("library libb.so does not match its SHA-256"));
    REQUIRE(removed.count("entry " + unsealed));
    CHECK_THAT(removed["entry " + unsealed], Catch::Contains("does not match library_sha256"));
    CHECK(cache.lookup(good).has_value());
    CHECK(cache.lookup(bad).error().kind == Miss::Kind::Absent);
    CHECK(cache.lookup(unsealed).error().kind == Miss::Kind::Absent);
}

TEST_CASE("an entry without a seal is checked and sealed on its first hit", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("legacy");
    REQUIRE(cache.ensure_created().has_value());
    write_fake_entry(entry_dir(cache, key), key, "k", "legacy bytes");
    CHECK_FALSE(fs::exists(entry_dir(cache, key) / "stamp.json"));
    auto hit = cache.lookup(key);
    REQUIRE(hit.has_value());
    CHECK(hit->name == "k");
    auto stamp = nlohmann::json::parse(test::read_file(entry_dir(cache, key) / "stamp.json"));
    CHECK(stamp["seal"] == 1);
    CHECK(stamp["files"]["libk.so"]["sha256"] == sha256_hex("legacy bytes"));
    CHECK(cache.lookup(key).has_value());
}

TEST_CASE("links planted in the cache are never served or followed", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    fs::path outside = tmp / "outside";
    std::string key = fake_key("planted");

    SECTION("an entry directory that is a link") {
        REQUIRE(cache.ensure_created().has_value());
        write_fake_entry(outside, key, "k", "outside bytes");
        fs::create_directories(entry_dir(cache, key).parent_path());
        fs::create_directory_symlink(outside, entry_dir(cache, key));
        auto r = cache.lookup(key);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Miss::Kind::Corrupt);
        CHECK_FALSE(fs::exists(fs::symlink_status(entry_dir(cache, key))));  // the link went
        CHECK(test::read_file(outside / "libk.so") == "outside bytes");
        CHECK_FALSE(fs::exists(outside / "stamp.json"));  // not sealed through the link
        CHECK_FALSE(fs::exists(outside / "last-use"));
        auto built = cache.get_or_build(key, fake_builder(key, "k", "own bytes"));
        REQUIRE(built.has_value());
        CHECK(test::read_file(built->entry.library) == "own bytes");
        CHECK(test::read_file(outside / "libk.so") == "outside bytes");
    }
    SECTION("a library that is a link to the same bytes") {
        auto built = cache.get_or_build(key, fake_builder(key, "k", "the bytes"));
        REQUIRE(built.has_value());
        test::write_file(outside / "libk.so", "the bytes");
        fs::remove(built->entry.library);
        fs::create_symlink(outside / "libk.so", built->entry.library);
        auto r = cache.lookup(key);
        REQUIRE_FALSE(r.has_value());
        CHECK_THAT(r.error().reason, Catch::Contains("library libk.so is missing"));
        CHECK_FALSE(fs::exists(built->entry.dir));
        CHECK(test::read_file(outside / "libk.so") == "the bytes");
    }
    SECTION("a last-use that is a link") {
        REQUIRE(cache.get_or_build(key, fake_builder(key, "k", "bytes")).has_value());
        test::write_file(outside / "mine", "mine");
        int64_t old = now_ns() - 3600'000'000'000;
        test::set_mtime(outside / "mine", old);
        fs::remove(last_use(cache, key));
        fs::create_symlink(outside / "mine", last_use(cache, key));
        REQUIRE(cache.lookup(key).has_value());  // still a hit; the link is not touched
        CHECK(test::mtime_ns(outside / "mine") == old);
        CHECK(fs::is_symlink(last_use(cache, key)));
        CHECK(cache.list().value().size() == 1);
    }
    SECTION("tmp/ that is a link") {
        fs::create_directories(outside);
        fs::create_directories(tmp / "cache");
        REQUIRE(cache.ensure_created());  // a cache, then a member plants the link
        fs::create_directory_symlink(outside, tmp / "cache" / "tmp");
        auto r = cache.get_or_build(key, fake_builder(key, "k", "bytes"));
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == ErrorKind::Cache);
        CHECK_THAT(r.error().message, Catch::Contains((tmp / "cache" / "tmp").string()) &&
                                          Catch::Contains("symbolic link"));
        CHECK(count_children(outside) == 0);
        CHECK(count_entries(tmp / "cache") == 0);
    }
}

TEST_CASE("refreshing a seal never re-creates a directory removed meanwhile", "[cache]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    test::write_file(tmp / "d" / "f", "bytes");
    auto seal = seal_dir(dir, "d", "f");
    REQUIRE(seal.has_value());
    fs::remove_all(tmp / "d");  // as prune or verify does, between a check and its restamp
    CHECK_FALSE(seal->write(dir, "d").has_value());
    CHECK_FALSE(fs::exists(tmp / "d"));
}

TEST_CASE("ensure_tree builds a sealed tree once and repairs a damaged one", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    fs::path rel = CacheLayout::runtime_include("0123456789abcdef");
    fs::path lock = CacheLayout::named_lock("runtime.0123456789abcdef");
    int calls = 0;
    Builder build = [&](const Staging& staging) -> StagingResult {
        ++calls;
        if (auto w = staging.write("bekc.h", "#pragma once\n"); !w) return w;
        return staging.write(fs::path("detail") / "x.h", "int x;\n");
    };
    auto tree = cache.ensure_tree(rel, lock, build);
    REQUIRE(tree.has_value());
    CHECK(*tree == cache.layout().path(rel));
    CHECK(test::read_file(*tree / "detail" / "x.h") == "int x;\n");
    CHECK(fs::exists(*tree / "stamp.json"));
    CHECK(cache.ensure_tree(rel, lock, build).has_value());
    CHECK(calls == 1);

    test::write_file(*tree / "bekc.h", "#pragma twice\n");
    auto repaired = cache.ensure_tree(rel, lock, build);
    REQUIRE(repaired.has_value());
    CHECK(calls == 2);
    CHECK(test::read_file(*tree / "bekc.h") == "#pragma once\n");
    CHECK(count_children(tmp / "cache" / "tmp") == 0);

    auto failed = cache.ensure_tree(
        CacheLayout::runtime_include("fedcba9876543210"), lock,
        [](const Staging&) -> StagingResult { return fail(ErrorKind::Cache, "no headers"); });
    REQUIRE_FALSE(failed.has_value());
    CHECK(failed.error().message == "no headers");
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
}

TEST_CASE("ensure_tree with replace rebuilds a sound tree, and keeps it when the build fails",
          "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    fs::path rel = CacheLayout::step(fake_key("step"));
    fs::path lock = CacheLayout::lock(fake_key("step"));
    auto writes = [](std::string text) {
        return [text](const Staging& staging) -> StagingResult { return staging.write("0", text); };
    };
    REQUIRE(cache.ensure_tree(rel, lock, writes("old")).has_value());
    CHECK(cache.ensure_tree(rel, lock, writes("new")).has_value());  // sound: kept
    CHECK(test::read_file(cache.layout().path(rel) / "0") == "old");
    REQUIRE(cache.ensure_tree(rel, lock, writes("new"), true).has_value());
    CHECK(test::read_file(cache.layout().path(rel) / "0") == "new");
    auto failed = cache.ensure_tree(
        rel, lock, [](const Staging&) -> StagingResult { return fail(ErrorKind::Cache, "no"); },
        true);
    REQUIRE_FALSE(failed.has_value());
    CHECK(test::read_file(cache.layout().path(rel) / "0") == "new");
    CHECK(cache.tree_ready(rel));
    CHECK(count_children(tmp / "cache" / "tmp") == 0);
}

TEST_CASE("verify leaves a damaged tree whose lock is held: it is being replaced", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string key = fake_key("step");
    fs::path rel = CacheLayout::step(key);
    REQUIRE(cache
                .ensure_tree(rel, CacheLayout::lock(key),
                             [](const Staging& staging) { return staging.write("0", "ptx"); })
                .has_value());
    test::write_file(cache.layout().path(rel) / "0", "half");
    {
        auto held = FileLock::try_acquire(cache.dir(), CacheLayout::lock(key));
        REQUIRE(held);
        auto report = cache.verify();
        REQUIRE(report.has_value());
        REQUIRE(report->removed.size() == 1);
        CHECK_THAT(report->removed[0].second, Catch::EndsWith("(left: being rebuilt)"));
        CHECK(fs::exists(cache.layout().path(rel) / "0"));
    }
    auto report = cache.verify();
    REQUIRE(report.has_value());
    REQUIRE(report->removed.size() == 1);
    CHECK_THAT(report->removed[0].second, !Catch::Contains("being rebuilt"));
    CHECK_FALSE(fs::exists(cache.layout().path(rel)));
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

TEST_CASE("the racy rule for directories: a stamp holds only unchanged and clear of the record",
          "[direct]") {
    const int64_t s = 1'000'000'000;
    DirStamp st{1, 2, 50 * s, 50 * s};
    CHECK(stamp_holds(st, st, 60 * s, 2s));
    CHECK_FALSE(stamp_holds(st, st, 50 * s + s / 2, 2s));  // same second as the record
    CHECK_FALSE(stamp_holds(st, st, 51 * s, 2s));          // within the window
    for (auto moved : {DirStamp{9, 2, 50 * s, 50 * s}, DirStamp{1, 9, 50 * s, 50 * s},
                       DirStamp{1, 2, 50 * s + 1, 50 * s}, DirStamp{1, 2, 50 * s, 50 * s + 1}})
        CHECK_FALSE(stamp_holds(st, moved, 60 * s, 2s));
}

TEST_CASE("shadowing paths: the including files' directories, then the earlier -I",
          "[cache][direct]") {
    const std::vector<fs::path> order = {"/i1", "/i2/", "/i3"};
    // Found under the third directory: R under the quoted directories first,
    // then under the two before it, whatever their trailing '/'.
    CHECK(shadowing_paths(order, "/i3/sub/x.h", {"/src", "/hdr/"}) ==
          std::vector<fs::path>{"/src/sub/x.h", "/hdr/sub/x.h", "/i1/sub/x.h", "/i2/sub/x.h"});
    // A dependency spelt with "." and ".." is normalised before it is matched.
    CHECK(shadowing_paths(order, "/i2/./a/../x.h") == std::vector<fs::path>{"/i1/x.h"});
    // The dependency itself is never a place that would shadow it: an
    // including file in the same directory as the header.
    CHECK(shadowing_paths(order, "/i3/x.h", {"/i3"}) ==
          std::vector<fs::path>{"/i1/x.h", "/i2/x.h"});
    // Under the first directory, or under none: nothing comes before it.
    CHECK(shadowing_paths(order, "/i1/x.h").empty());
    CHECK(shadowing_paths(order, "/i10/x.h").empty());
    CHECK(shadowing_paths(order, "/elsewhere/x.h", {"/src"}).empty());
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

TEST_CASE("direct mode sees a shadowing header wherever its directory comes from",
          "[cache][direct]") {
    // inc1 and inc1/sub do not exist when the record is made: the lookup
    // takes their paths as absent from the directories' own lstat.
    DirectFixture f;
    Cache cache(f.tmp / "cache");
    REQUIRE(cache.record_direct(f.direct_key, f.inputs()).has_value());
    REQUIRE(cache.lookup_direct(f.direct_key).key == f.key);
    const fs::path shadow = f.inc1 / "sub" / "b.h";

    SECTION("a file where a directory would be: nothing under it") {
        test::write_file(f.inc1, "not a directory\n");
        CHECK(cache.lookup_direct(f.direct_key).key == f.key);
    }
    SECTION("a link to a directory without the header, then with it") {
        fs::create_directories(f.inc1);
        fs::create_directories(f.tmp / "elsewhere");
        fs::create_directory_symlink(f.tmp / "elsewhere", f.inc1 / "sub");
        CHECK(cache.lookup_direct(f.direct_key).key == f.key);
        test::write_file(f.tmp / "elsewhere" / "b.h", "#define B 3\n");
        DirectLookup r = cache.lookup_direct(f.direct_key);
        CHECK_FALSE(r.key.has_value());
        CHECK(r.why_not == shadow.string() + " now exists and shadows a header");
    }
    SECTION("a dangling link in a directory that exists") {
        fs::create_directories(f.inc1 / "sub");
        CHECK(cache.lookup_direct(f.direct_key).key == f.key);
        fs::create_symlink(f.tmp / "nowhere.h", shadow);
        CHECK_FALSE(cache.lookup_direct(f.direct_key).key.has_value());
    }
    SECTION("a directory that appears between two lookups") {
        fs::create_directories(f.inc1 / "sub");
        CHECK(cache.lookup_direct(f.direct_key).key == f.key);
        test::write_file(shadow, "#define B 3\n");
        CHECK_FALSE(cache.lookup_direct(f.direct_key).key.has_value());
    }
}

TEST_CASE("direct mode sees a shadowing header among many absent names of one directory",
          "[cache][direct]") {
    // Several headers absent from one existing directory (a system include
    // directory searched before the real one): each kind of new entry under
    // any of the names is seen.
    DirectFixture f;
    fs::create_directories(f.inc1);
    test::write_file(f.inc1 / "unrelated.h", "\n");
    Cache cache(f.tmp / "cache");
    DirectInputs in = f.inputs();
    std::vector<fs::path> names;
    for (const char* n : {"c.h", "d.h", "e.h", "f.h", "g.h"}) {
        fs::path dep = f.inc2 / n;
        test::write_file(dep, "\n");
        in.dependencies.push_back({dep, ""});
        for (const auto& p : shadowing_paths({f.inc1, f.inc2}, dep)) in.must_not_exist.push_back(p);
        names.push_back(f.inc1 / n);
    }
    REQUIRE(cache.record_direct(f.direct_key, in).has_value());
    REQUIRE(cache.lookup_direct(f.direct_key).key == f.key);
    const fs::path& last = names.back();

    SECTION("a new header") {
        test::write_file(last, "\n");
        DirectLookup r = cache.lookup_direct(f.direct_key);
        CHECK_FALSE(r.key.has_value());
        CHECK(r.why_not == last.string() + " now exists and shadows a header");
    }
    SECTION("a dangling link") {
        fs::create_symlink(f.tmp / "nowhere.h", last);
        CHECK_FALSE(cache.lookup_direct(f.direct_key).key.has_value());
    }
    SECTION("a directory of that name") {
        fs::create_directories(last);
        CHECK_FALSE(cache.lookup_direct(f.direct_key).key.has_value());
    }
    SECTION("the directory replaced by a link to one that has the header") {
        fs::create_directories(f.tmp / "other");
        test::write_file(f.tmp / "other" / last.filename(), "\n");
        fs::remove_all(f.inc1);
        fs::create_directory_symlink(f.tmp / "other", f.inc1);
        CHECK_FALSE(cache.lookup_direct(f.direct_key).key.has_value());
    }
    SECTION("other names come and go: still a hit") {
        test::write_file(f.inc1 / "more.h", "\n");
        fs::remove(f.inc1 / "unrelated.h");
        CHECK(cache.lookup_direct(f.direct_key).key == f.key);
    }
}

TEST_CASE("direct mode checks every record's absent paths, a missing directory's included",
          "[cache][direct]") {
    // Two records with the same absent paths: the first fails on a changed
    // header, the second holds; a shadowing header that appears then fails
    // both.
    DirectFixture f;
    Cache cache(f.tmp / "cache");
    DirectInputs old_inputs = f.inputs();
    old_inputs.key = fake_key("old");
    REQUIRE(cache.record_direct(f.direct_key, old_inputs).has_value());
    test::write_file(f.a, "#define A 2\n");
    DirectInputs new_inputs = f.inputs();
    new_inputs.dependencies[0].sha256 = sha256_hex("#define A 2\n");
    REQUIRE(cache.record_direct(f.direct_key, new_inputs).has_value());
    test::write_file(f.a, "#define A 1\n");
    CHECK(cache.lookup_direct(f.direct_key).key == fake_key("old"));
    test::write_file(f.inc1 / "a.h", "#define A 1\n");
    DirectLookup r = cache.lookup_direct(f.direct_key);
    CHECK_FALSE(r.key.has_value());
    CHECK(r.why_not == (f.inc1 / "a.h").string() + " now exists and shadows a header");
}

namespace {

// Directory timestamps move in clock ticks (a few milliseconds): sleeping past
// the window puts a change clearly after the record and the record clearly
// after the directory's last change.
constexpr auto kDirWindow = 100ms;
void past_the_window() {
    std::this_thread::sleep_for(kDirWindow + 50ms);
}

// DirectFixture with inc1 present: every shadowing path of a.h, b.h and
// five more headers lies under it, most of them right in it.
struct StampFixture : DirectFixture {
    Cache cache;
    DirectInputs in = inputs();

    explicit StampFixture(std::chrono::nanoseconds window = kDirWindow)
        : cache(tmp / "cache", CacheOptions{.racy_window = window}) {
        fs::create_directories(inc1);
        test::write_file(inc1 / "unrelated.h", "\n");
        for (const char* n : {"c.h", "d.h", "e.h", "f.h", "g.h"}) {
            test::write_file(inc2 / n, "\n");
            in.dependencies.push_back({inc2 / n, ""});
            for (const auto& p : shadowing_paths({inc1, inc2}, inc2 / n))
                in.must_not_exist.push_back(p);
        }
        for (const auto& p : shadowing_paths({inc1, inc2}, a)) in.must_not_exist.push_back(p);
        for (const auto& p : shadowing_paths({inc1, inc2}, b)) in.must_not_exist.push_back(p);
    }

    // Whether the test directory's file system gets stamps at all.
    bool stamps() const {
        if (keeps_dir_times(tmp.path().string())) return true;
        WARN("the temporary directory's file system keeps no directory times: no stamps");
        return false;
    }

    DirectRecord record_on_file() const {
        auto records = decode_direct_records(
            test::read_file(cache.layout().path(CacheLayout::direct_record(direct_key))));
        REQUIRE(records);
        REQUIRE(records->size() == 1);
        return (*records)[0];
    }
};

// The lookup misses, because `path` now exists.
void check_shadowed(StampFixture& f, const fs::path& path) {
    DirectLookup r = f.cache.lookup_direct(f.direct_key);
    CHECK_FALSE(r.key.has_value());
    CHECK(r.why_not == path.string() + " now exists and shadows a header");
}

}  // namespace

TEST_CASE("direct mode takes absent paths as absent while their directory's stamp holds",
          "[cache][direct]") {
    StampFixture f;
    if (!f.stamps()) return;
    past_the_window();
    REQUIRE(f.cache.record_direct(f.direct_key, f.in).has_value());
    DirectLookup hit = f.cache.lookup_direct(f.direct_key);
    REQUIRE(hit.key == f.key);
    CHECK(hit.absent_checked == 0);
    past_the_window();
    const fs::path shadow = f.inc1 / "sub" / "b.h";

    SECTION("a new header in it") {
        test::write_file(f.inc1 / "g.h", "\n");
        check_shadowed(f, f.inc1 / "g.h");
    }
    SECTION("a new directory on the way to a path, then the header in it") {
        fs::create_directories(f.inc1 / "sub");
        DirectLookup r = f.cache.lookup_direct(f.direct_key);
        CHECK(r.key == f.key);
        CHECK(r.absent_checked > 0);
        past_the_window();
        test::write_file(shadow, "\n");
        check_shadowed(f, shadow);
    }
    SECTION("the directory replaced by a link to one that has the header") {
        fs::create_directories(f.tmp / "other");
        test::write_file(f.tmp / "other" / "c.h", "\n");
        fs::rename(f.inc1, f.tmp / "inc1.old");
        fs::create_directory_symlink(f.tmp / "other", f.inc1);
        CHECK_FALSE(f.cache.lookup_direct(f.direct_key).key.has_value());
    }
    SECTION("the directory renamed away and back: its ctime moved") {
        fs::rename(f.inc1, f.tmp / "inc1.old");
        fs::rename(f.tmp / "inc1.old", f.inc1);
        DirectLookup r = f.cache.lookup_direct(f.direct_key);
        CHECK(r.key == f.key);
        CHECK(r.absent_checked > 0);
    }
    SECTION("other names come and go: each path is checked, the hit stands, and is stamped again") {
        test::write_file(f.inc1 / "more.h", "\n");
        fs::remove(f.inc1 / "unrelated.h");
        DirectLookup r = f.cache.lookup_direct(f.direct_key);
        CHECK(r.key == f.key);
        CHECK(r.absent_checked > 0);
        past_the_window();
        r = f.cache.lookup_direct(f.direct_key);
        CHECK(r.key == f.key);
        CHECK(r.absent_checked > 0);  // stamped again now, outside the window of the change
        r = f.cache.lookup_direct(f.direct_key);
        CHECK(r.key == f.key);
        CHECK(r.absent_checked == 0);
        test::write_file(f.inc1 / "c.h", "\n");
        CHECK_FALSE(f.cache.lookup_direct(f.direct_key).key.has_value());
    }
}

TEST_CASE("direct mode does not trust a directory stamped within the racy window",
          "[cache][direct]") {
    // Recorded right after the directory changed: a header added in the same
    // clock tick would leave its timestamps as they are, so each path is
    // checked until a lookup outside the window stamps it again.
    StampFixture f(10s);
    if (!f.stamps()) return;
    REQUIRE(f.cache.record_direct(f.direct_key, f.in).has_value());
    DirectLookup r = f.cache.lookup_direct(f.direct_key);
    CHECK(r.key == f.key);
    CHECK(r.absent_checked > 0);
    test::write_file(f.inc1 / "d.h", "\n");
    check_shadowed(f, f.inc1 / "d.h");
}

TEST_CASE("direct mode stamps no directory whose entry on the way to a path is a link",
          "[cache][direct]") {
    // inc1/sub is a dangling link when the record is made: b.h under it is
    // absent, but appears without inc1 changing when the link's target does.
    StampFixture f;
    if (!f.stamps()) return;
    fs::create_directory_symlink(f.tmp / "elsewhere", f.inc1 / "sub");
    past_the_window();
    REQUIRE(f.cache.record_direct(f.direct_key, f.in).has_value());
    REQUIRE(f.cache.lookup_direct(f.direct_key).key == f.key);
    fs::create_directories(f.tmp / "elsewhere");
    test::write_file(f.tmp / "elsewhere" / "b.h", "\n");
    check_shadowed(f, f.inc1 / "sub" / "b.h");
}

TEST_CASE("direct mode never lets a rewritten record make a stamp hold that did not",
          "[cache][direct]") {
    // inc1 changes (inc1/sub appears) in the clock tick its stamp was taken:
    // the stamp stays equal but too close to the record to hold. A lookup
    // that rewrites the record for another reason (a.h's stat refreshed)
    // moves the record's time past the window; the old stamp must not come
    // with it, or b.h appearing in sub (which leaves inc1 as it is) is missed.
    StampFixture f;
    if (!f.stamps()) return;
    REQUIRE(f.cache.record_direct(f.direct_key, f.in).has_value());
    fs::create_directories(f.inc1 / "sub");
    DirectRecord same_tick = f.record_on_file();
    REQUIRE(same_tick.absent_dirs.size() == 1);
    same_tick.absent_dirs[0].stamp = *dir_stamp(f.inc1.c_str());
    REQUIRE(
        write_direct_records(f.cache.dir(), CacheLayout::direct_record(f.direct_key), {same_tick})
            .has_value());
    test::set_mtime(f.a, test::mtime_ns(f.a) - 10'000'000'000);
    past_the_window();
    DirectLookup rewritten = f.cache.lookup_direct(f.direct_key);
    REQUIRE(rewritten.key == f.key);
    REQUIRE(rewritten.rehashed >= 1);
    REQUIRE(f.record_on_file().written_ns > same_tick.written_ns);
    test::write_file(f.inc1 / "sub" / "b.h", "\n");
    check_shadowed(f, f.inc1 / "sub" / "b.h");
}

TEST_CASE("direct mode lists whole an absent path whose name below its directory is not plain",
          "[cache][direct]") {
    // A remote record's paths need not be normal: "inc1/none/../c.h" cannot
    // be a name below inc1 in a record, so it is checked by its own lstat,
    // and the record stays readable.
    StampFixture f;
    if (!f.stamps()) return;
    const std::string odd = (f.inc1 / "none").string() + "/../c.h";
    f.in.must_not_exist.push_back(odd);
    past_the_window();
    REQUIRE(f.cache.record_direct(f.direct_key, f.in).has_value());
    DirectRecord on_file = f.record_on_file();
    CHECK(on_file.absent == std::vector<std::string>{odd});
    DirectLookup hit = f.cache.lookup_direct(f.direct_key);
    CHECK(hit.key == f.key);
    CHECK(hit.absent_checked == 1);
}

TEST_CASE("direct mode refuses to record a header edited during the build", "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache");
    DirectInputs in = f.inputs();
    test::write_file(f.a, "#define A 7\n");  // after the key saw "#define A 1"
    auto r = cache.record_direct(f.direct_key, in);
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error().message, Catch::Contains("a.h changed during the build"));
    CHECK_FALSE(cache.lookup_direct(f.direct_key).key.has_value());
}

TEST_CASE("direct mode records a dependency read for the key as it was read, without reading again",
          "[cache][direct]") {
    DirectFixture f;
    Cache cache(f.tmp / "cache", CacheOptions{.racy_window = 0ns});
    int64_t old = now_ns() - 3600'000'000'000;
    test::set_mtime(f.a, old);
    int64_t examined = now_ns();
    auto digest = digest_file(f.a);
    REQUIRE(digest.has_value());
    DirectInputs in{f.key, {{f.a, digest->sha256, digest->stat, digest->xxh128}}, {}};
    in.examined_ns = examined;
    // Rewritten after it was read: the record keeps the stat and the bytes
    // the key saw, and the lookup tells the difference.
    test::write_file(f.a, "#define A 8\n");
    test::set_mtime(f.a, old);
    REQUIRE(cache.record_direct(f.direct_key, in).has_value());
    auto records = read_direct_records(cache.dir(), CacheLayout::direct_record(f.direct_key));
    REQUIRE(records.size() == 1);
    CHECK(records[0].written_ns == examined);
    CHECK(records[0].files[0].xxh128 == xxh128_hex("#define A 1\n"));
    DirectLookup changed = cache.lookup_direct(f.direct_key);
    CHECK_FALSE(changed.key.has_value());
    CHECK(changed.why_not == f.a.string() + " changed");
    // Unchanged since it was read: a hit, trusted by its stat.
    test::write_file(f.a, "#define A 1\n");
    test::set_mtime(f.a, old);
    in.examined_ns = now_ns();
    digest = digest_file(f.a);
    REQUIRE(digest.has_value());
    in.dependencies = {{f.a, digest->sha256, digest->stat, digest->xxh128}};
    REQUIRE(cache.record_direct(f.direct_key, in).has_value());
    DirectLookup hit = cache.lookup_direct(f.direct_key);
    CHECK(hit.key == f.key);
    CHECK(hit.rehashed == 0);
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
    CHECK(read_direct_records(cache.dir(), CacheLayout::direct_record(f.direct_key)).size() ==
          kMaxDirectRecords);
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
    for (int i = 0; i < 3; ++i)
        test::set_mtime(last_use(cache, keys[i]), now - (300 - 100 * i) * 1'000'000'000LL);
    REQUIRE(cache.lookup(keys[0]).has_value());  // a hit makes "a" the newest

    CacheStats before = cache.stats().value();
    CHECK(before.entries == 3);
    PruneReport report = cache.prune(before.bytes - 1).value();
    CHECK(report.entries_removed == 1);
    CHECK(report.bytes_before == before.bytes);
    CHECK(report.bytes_after < before.bytes);
    CHECK(cache.lookup(keys[1]).error().kind == Miss::Kind::Absent);  // "b" was oldest
    CHECK(cache.lookup(keys[0]).has_value());
    CHECK(cache.lookup(keys[2]).has_value());

    CHECK(cache.prune(0).value().entries_removed == 2);
    CHECK(cache.stats().value().entries == 0);
}

TEST_CASE("prune spares an entry whose key lock is held", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string held = fake_key("held"), free = fake_key("free");
    REQUIRE(cache.get_or_build(held, fake_builder(held, "h", std::string(5000, 'h'))).has_value());
    REQUIRE(cache.get_or_build(free, fake_builder(free, "f", std::string(5000, 'f'))).has_value());
    // The held entry is the older: it would go first.
    test::set_mtime(last_use(cache, held), now_ns() - 600'000'000'000LL);
    {
        auto lock = FileLock::acquire(cache.dir(), CacheLayout::lock(held), 1s);
        REQUIRE(lock.has_value());
        auto report = cache.prune(0);
        REQUIRE(report.has_value());
        CHECK(report->entries_removed == 1);
        CHECK(fs::exists(entry_dir(cache, held)));
        CHECK_FALSE(fs::exists(entry_dir(cache, free)));
        CHECK(fs::exists(cache.layout().path(CacheLayout::lock(held))));  // not an idle lock
    }
    CHECK(cache.prune(0).value().entries_removed == 1);
    CHECK_FALSE(fs::exists(entry_dir(cache, held)));
    CHECK(count_children(tmp / "cache" / "locks" / held.substr(0, 2)) == 0);
}

TEST_CASE("list and clear work by manifest name", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::string k1 = fake_key("1"), k2 = fake_key("2"), k3 = fake_key("3");
    REQUIRE(cache.get_or_build(k1, fake_builder(k1, "alpha", "one")).has_value());
    REQUIRE(cache.get_or_build(k2, fake_builder(k2, "alpha", "two")).has_value());
    REQUIRE(cache.get_or_build(k3, fake_builder(k3, "beta", "three")).has_value());
    test::set_mtime(last_use(cache, k3), now_ns() + 1'000'000'000);

    auto entries = cache.list().value();
    REQUIRE(entries.size() == 3);
    CHECK(entries[0].key == k3);  // newest first
    CHECK(entries[0].name == "beta");
    CHECK(entries[0].dir == entry_dir(cache, k3));
    CHECK(entries[0].targets == 1);
    CHECK(entries[0].bytes > 5);
    CHECK(entries[0].problem.empty());

    CHECK(cache.clear("alpha").value() == 2);
    REQUIRE(cache.list().value().size() == 1);
    CHECK(cache.list().value()[0].name == "beta");

    std::string dk = fake_key("direct");
    test::write_file(tmp / "h.h", "x");
    REQUIRE(cache.record_direct(dk, DirectInputs{k3, {{tmp / "h.h", ""}}, {}}).has_value());
    cache.write_memo(CacheLayout::tool_memo(), "{}");
    CHECK(cache.stats().value().direct_records == 1);
    // An older bekc's JSON records, which this one never reads, go too.
    const std::string old_key = fake_key("old");
    const fs::path old_record =
        tmp / "cache" / "portable" / old_key.substr(0, 2) / (old_key.substr(2) + ".json");
    test::write_file(old_record, R"({"format": 2, "records": []})");
    CHECK(cache.clear().value() == 1);
    CHECK_FALSE(fs::exists(old_record));
    CacheStats stats = cache.stats().value();
    CHECK(stats.entries == 0);
    CHECK(stats.direct_records == 0);
    CHECK(stats.entry_bytes == 0);
    // What stays is what marks the directory as a bekc cache.
    CHECK(stats.bytes == fs::file_size(tmp / "cache" / "bekc-cache.json") +
                             fs::file_size(tmp / "cache" / "CACHEDIR.TAG"));
    CHECK_FALSE(fs::exists(tmp / "cache" / "tools.json"));
    CHECK(count_children(tmp / "cache" / "locks" / k3.substr(0, 2)) == 0);
}

TEST_CASE("maintenance works only on a directory that is a bekc cache", "[cache]") {
    test::TempDir tmp;

    SECTION("a missing directory is an empty cache") {
        Cache cache(tmp / "missing");
        auto is = cache.is_cache();
        REQUIRE(is.has_value());
        CHECK_FALSE(*is);
        CHECK(cache.list().value().empty());
        CHECK(cache.stats().value().bytes == 0);
        CHECK(cache.clear().value() == 0);
        CHECK(cache.prune(0).value().entries_removed == 0);
        CHECK(cache.verify().value().checked == 0);
        CHECK_FALSE(fs::exists(tmp / "missing"));
    }
    SECTION("a foreign directory is refused, and left as it is") {
        fs::path root = tmp / "home";
        std::string key = fake_key("looks like ours");
        test::write_file(root / "notes.txt", "mine");
        test::write_file(root / "tmp" / ("trash." + unique_suffix()) / "f", "mine");
        write_fake_entry(root / "entries" / key.substr(0, 2) / key.substr(2), key, "k", "x");
        test::write_file(root / "CACHEDIR.TAG",
                         "Signature: 8a477f597d28d172789f06886806bc55\n"
                         "# created by some other tool\n");
        Cache cache(root, CacheOptions{.stale_temp_age = 0s});
        auto is = cache.is_cache();
        REQUIRE_FALSE(is.has_value());
        CHECK_THAT(is.error().message, Catch::Contains(root.string()) &&
                                           Catch::Contains("is not a bekc cache") &&
                                           Catch::Contains("bekc-cache.json"));
        CHECK_THAT(cache.clear().error().message, Catch::Contains(root.string()));
        CHECK_FALSE(cache.prune(0).has_value());
        CHECK_FALSE(cache.verify().has_value());
        CHECK_FALSE(cache.list().has_value());
        CHECK_FALSE(cache.stats().has_value());
        CHECK(test::read_file(root / "notes.txt") == "mine");
        CHECK(count_children(root / "tmp") == 1);
        CHECK(count_entries(root) == 1);
        CHECK_FALSE(fs::exists(root / "bekc-cache.json"));
    }
    SECTION("a file where the cache should be is refused") {
        test::write_file(tmp / "file", "x");
        auto is = Cache(tmp / "file").is_cache();
        REQUIRE_FALSE(is.has_value());
        CHECK_THAT(is.error().message, Catch::Contains((tmp / "file").string()));
    }
    SECTION("a cache of an older bekc, with only its CACHEDIR.TAG, gets the marker") {
        fs::path root = tmp / "old";
        test::write_file(root / "CACHEDIR.TAG",
                         "Signature: 8a477f597d28d172789f06886806bc55\n"
                         "# This file is a cache directory tag created by bekc.\n");
        Cache cache(root);
        auto is = cache.is_cache();
        REQUIRE(is.has_value());
        CHECK(*is);
        REQUIRE(fs::exists(root / "bekc-cache.json"));
        CHECK(nlohmann::json::parse(test::read_file(root / "bekc-cache.json"))["bekc_cache"] == 1);
        CHECK(cache.list().has_value());
    }
    SECTION("a marker that is not bekc's is refused") {
        fs::path root = tmp / "odd";
        for (std::string marker : {"{\"bekc_cache\": 2}", "{\"bekc_cache\": \"1\"}",
                                   "{\"bekc_cache\": null}", "[1]", "not json"}) {
            INFO(marker);
            test::write_file(root / "bekc-cache.json", marker);
            auto is = Cache(root).is_cache();
            REQUIRE_FALSE(is.has_value());
            CHECK_THAT(is.error().message, Catch::Contains("is not a bekc cache"));
        }
    }
    SECTION("a cache bekc made is one") {
        Cache cache(tmp / "made");
        REQUIRE(cache.ensure_created().has_value());
        CHECK(cache.is_cache().value());
        CHECK(fs::exists(tmp / "made" / "CACHEDIR.TAG"));
    }
}

TEST_CASE("the size limit comes from the environment, the marker, or the default", "[cache]") {
    test::TempDir tmp;
    Cache cache(tmp / "cache");
    std::map<std::string, std::string> env;
    EnvLookup lookup = [&](std::string_view name) -> std::optional<std::string> {
        auto it = env.find(std::string(name));
        return it == env.end() ? std::nullopt : std::optional(it->second);
    };
    CHECK(cache.size_limit(lookup).value().bytes == kDefaultMaxCacheSize);
    CHECK(cache.size_limit(lookup).value().source == "default");
    REQUIRE(cache.store_size_limit(2'000'000).has_value());
    CHECK(cache.size_limit(lookup).value().bytes == 2'000'000);
    CHECK(cache.size_limit(lookup).value().source == "bekc-cache.json");
    CHECK(cache.is_cache().value());  // the marker keeps what makes it one
    env["BEKC_CACHE_MAX_SIZE"] = "1M";
    CHECK(cache.size_limit(lookup).value().bytes == 1'000'000);
    CHECK(cache.size_limit(lookup).value().source == "BEKC_CACHE_MAX_SIZE");
    env["BEKC_CACHE_MAX_SIZE"] = "lots";
    CHECK_THAT(cache.size_limit(lookup).error().message, Catch::Contains("BEKC_CACHE_MAX_SIZE"));
    env.clear();
    test::write_file(tmp / "cache" / "bekc-cache.json", R"({"bekc_cache": 1, "max_size": "1G"})");
    CHECK_THAT(cache.size_limit(lookup).error().message, Catch::Contains("max_size"));
}

TEST_CASE("enforce_limit keeps the cache under its limit, sparing recent entries", "[cache]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    std::vector<std::string> keys;
    std::vector<Entry> entries;
    auto build_all = [&](Cache& cache) {
        for (std::string seed : {"a", "b", "c", "d"}) {
            keys.push_back(fake_key(seed));
            auto built = cache.get_or_build(
                keys.back(), fake_builder(keys.back(), seed, std::string(20000, 'x')));
            REQUIRE(built.has_value());
            entries.push_back(built->entry);
        }
    };
    auto exists = [&](size_t i) { return fs::exists(entries[i].dir); };
    auto age = [&](Cache& cache, size_t i, int64_t seconds) {
        test::set_mtime(last_use(cache, keys[i]), now_ns() - seconds * 1'000'000'000LL);
    };

    SECTION("oldest first, never the entry just published") {
        Cache cache(root, CacheOptions{.recent_use = 0s});
        build_all(cache);
        // "d" was just published but is the oldest by last use.
        age(cache, 3, 4000);
        age(cache, 0, 3000);
        age(cache, 1, 2000);
        age(cache, 2, 1000);
        uint64_t total = cache.stats().value().bytes;
        uint64_t entry = cache.list().value()[0].bytes;
        uint64_t rest = total - 4 * entry;
        // Room for two and a half entries after the prune (to 90% of the limit).
        uint64_t limit = (rest + 2 * entry + entry / 2) * 10 / 9 + 10;
        CHECK(cache.enforce_limit(entries[3], "", limit).has_value());
        CHECK(cache.stats().value().bytes <= limit);
        CHECK_FALSE(exists(0));
        CHECK_FALSE(exists(1));
        CHECK(exists(2));
        CHECK(exists(3));
        CHECK(fs::exists(root / "size.json"));
        // Under the limit now: nothing more goes.
        CHECK(cache.enforce_limit(entries[2], "", limit).has_value());
        CHECK(exists(2));
        CHECK(exists(3));
    }
    SECTION("entries used within recent_use stay, even over the limit") {
        Cache cache(root, CacheOptions{.recent_use = 60s});
        build_all(cache);
        age(cache, 0, 3000);
        age(cache, 1, 2000);
        // "c" and "d" were used within the last minute.
        CHECK(cache.enforce_limit(entries[3], "", 1).has_value());
        CHECK_FALSE(exists(0));
        CHECK_FALSE(exists(1));
        CHECK(exists(2));
        CHECK(exists(3));
        CHECK(cache.stats().value().entries == 2);
    }
    SECTION("with the default recent_use, entries just built all stay") {
        Cache cache(root);
        build_all(cache);
        for (const auto& key : keys) REQUIRE(cache.lookup(key).has_value());  // used just now
        CHECK(cache.enforce_limit(entries[0], "", 1).has_value());
        for (size_t i = 0; i < 4; ++i) CHECK(exists(i));
    }
    SECTION("no limit, no work") {
        Cache cache(root, CacheOptions{.recent_use = 0s});
        build_all(cache);
        CHECK(cache.enforce_limit(entries[0], "", 0).has_value());
        for (size_t i = 0; i < 4; ++i) CHECK(exists(i));
        CHECK_FALSE(fs::exists(root / "size.json"));
    }
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
        CHECK_THAT(parse_size(bad).error().message, Catch::Contains("500M, 2G, 1.5GiB or 100KB"));
    }
}

TEST_CASE("sizes format for people", "[cache][size]") {
    CHECK(format_size(0) == "0 B");
    CHECK(format_size(999) == "999 B");
    CHECK(format_size(1500) == "1.5 kB");
    CHECK(format_size(2'000'000'000) == "2.0 GB");
}
