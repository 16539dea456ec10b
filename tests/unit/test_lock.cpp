#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "../helpers/child.hpp"
#include "../helpers/temp_dir.hpp"
#include "store/lock.hpp"

using namespace bekc;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST_CASE("a lock is exclusive and released on destruction", "[lock]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    fs::path rel = fs::path("locks") / "ab" / "key.lock";
    {
        auto held = FileLock::acquire(dir, rel, 1s);
        REQUIRE(held.has_value());
        CHECK(held->path() == tmp / rel);
        CHECK(fs::exists(tmp / rel));
        // flock excludes other open file descriptions, even in one process.
        CHECK_FALSE(FileLock::try_acquire(dir, rel).has_value());
        auto waited = FileLock::acquire(dir, rel, 100ms);
        REQUIRE_FALSE(waited.has_value());
        CHECK_THAT(waited.error().message, Catch::StartsWith("gave up after 0.1 s waiting"));
    }
    CHECK(FileLock::try_acquire(dir, rel).has_value());
}

TEST_CASE("a waiting process gets the lock when the holder releases it", "[lock]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    test::ReadySignal ready;
    pid_t child = test::fork_child([&] {
        auto lock = FileLock::acquire(dir, "key.lock", 5s);
        if (!lock) return 1;
        ready.notify();
        std::this_thread::sleep_for(300ms);
        return 0;
    });
    REQUIRE(ready.wait());
    auto start = Clock::now();
    auto lock = FileLock::acquire(dir, "key.lock", 10s);
    CHECK(lock.has_value());
    CHECK(Clock::now() - start >= 150ms);
    CHECK(test::wait_child(child) == 0);
}

TEST_CASE("timing out names the lock file and its holder", "[lock]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    test::ReadySignal ready;
    pid_t child = test::fork_child([&] {
        auto lock = FileLock::acquire(dir, "key.lock", 5s);
        if (!lock) return 1;
        ready.notify();
        pause();
        return 0;
    });
    REQUIRE(ready.wait());
    auto start = Clock::now();
    auto lock = FileLock::acquire(dir, "key.lock", 200ms);
    auto waited = Clock::now() - start;
    kill(child, SIGKILL);  // not TERM: Catch2's handlers live on in the child
    test::wait_child(child);
    REQUIRE_FALSE(lock.has_value());
    CHECK(lock.error().kind == ErrorKind::Cache);
    CHECK(waited >= 200ms);
    CHECK(waited < 5s);
    CHECK_THAT(lock.error().message, Catch::Contains((tmp / "key.lock").string()));
    CHECK_THAT(lock.error().message, Catch::Contains("pid " + std::to_string(child)));
    CHECK_THAT(lock.error().message, Catch::Contains("0.2 s"));
    // What to do about it, as a note.
    REQUIRE(lock.error().notes.size() == 1);
    CHECK_THAT(lock.error().notes[0],
               Catch::Contains("another bekc process is building the same cache entry"));
}

TEST_CASE("a lock held by a process killed with SIGKILL does not block", "[lock]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    test::ReadySignal ready;
    pid_t child = test::fork_child([&] {
        auto lock = FileLock::acquire(dir, "key.lock", 5s);
        if (!lock) return 1;
        ready.notify();
        pause();
        return 0;
    });
    REQUIRE(ready.wait());
    CHECK_FALSE(FileLock::try_acquire(dir, "key.lock").has_value());
    kill(child, SIGKILL);
    CHECK(test::wait_child(child) == 128 + SIGKILL);
    auto start = Clock::now();
    auto lock = FileLock::acquire(dir, "key.lock", 5s);
    CHECK(lock.has_value());
    CHECK(Clock::now() - start < 1s);
    CHECK(fs::exists(tmp / "key.lock"));  // the file stays; only the kernel's lock mattered
}

TEST_CASE("removing a lock file while waiters wait keeps the lock exclusive", "[lock]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    auto first = FileLock::acquire(dir, "key.lock", 1s);
    REQUIRE(first.has_value());
    std::optional<FileLock> second;
    std::thread waiter([&] {
        auto lock = FileLock::acquire(dir, "key.lock", 5s);
        if (lock) second.emplace(std::move(*lock));
    });
    std::this_thread::sleep_for(50ms);  // let the waiter open the old file
    first->remove_and_release();
    waiter.join();
    REQUIRE(second.has_value());
    // The waiter must hold the lock on the file now at the path.
    CHECK(fs::exists(tmp / "key.lock"));
    CHECK_FALSE(FileLock::try_acquire(dir, "key.lock").has_value());
}

TEST_CASE("a lock file that cannot be created is an error, not a timeout", "[lock]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    test::write_file(tmp / "file", "x");
    auto lock = FileLock::acquire(dir, fs::path("file") / "sub.lock", 1s);
    REQUIRE_FALSE(lock.has_value());
    CHECK_THAT(lock.error().message, !Catch::Contains("gave up"));
    // The error names the component that failed: the file where a directory
    // was needed.
    CHECK_THAT(lock.error().message,
               Catch::Contains((tmp / "file").string()) && Catch::Contains("Not a directory"));
}

TEST_CASE("a link at or above the lock file is an error, never followed", "[lock]") {
    test::TempDir tmp;
    fs::path outside = tmp / "outside";
    test::write_file(outside / "precious", "precious");
    fs::create_directories(tmp / "cache");
    CacheDir dir(tmp / "cache");

    SECTION("the lock file is a link to an existing file") {
        fs::create_symlink(outside / "precious", tmp / "cache" / "key.lock");
        auto lock = FileLock::acquire(dir, "key.lock", 1s);
        REQUIRE_FALSE(lock.has_value());
        CHECK_THAT(lock.error().message, !Catch::Contains("gave up"));
        CHECK_THAT(lock.error().message, Catch::Contains("symbolic link"));
        CHECK_FALSE(FileLock::try_acquire(dir, "key.lock").has_value());
        CHECK(test::read_file(outside / "precious") == "precious");  // not truncated
    }
    SECTION("the lock file is a dangling link") {
        fs::create_symlink(outside / "planted", tmp / "cache" / "key.lock");
        auto lock = FileLock::acquire(dir, "key.lock", 1s);
        REQUIRE_FALSE(lock.has_value());
        CHECK_THAT(lock.error().message, !Catch::Contains("gave up"));
        CHECK_FALSE(fs::exists(outside / "planted"));  // not created through the link
    }
    SECTION("a directory above it is a link") {
        fs::create_symlink(outside, tmp / "cache" / "locks");
        auto lock = FileLock::acquire(dir, fs::path("locks") / "ab" / "key.lock", 1s);
        REQUIRE_FALSE(lock.has_value());
        CHECK_THAT(lock.error().message, !Catch::Contains("gave up"));
        CHECK_THAT(lock.error().message, Catch::Contains((tmp / "cache" / "locks").string()) &&
                                             Catch::Contains("symbolic link"));
        CHECK_FALSE(fs::exists(outside / "ab"));
    }
}
