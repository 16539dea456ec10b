// The cache directory's file operations (store/cache_dir.hpp), which follow
// no link below the root, and the seal of published directories
// (store/seal.hpp).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <thread>

#include "../helpers/child.hpp"
#include "../helpers/temp_dir.hpp"
#include "store/cache_dir.hpp"
#include "store/hash.hpp"
#include "store/seal.hpp"
#include "util/error.hpp"

using namespace bekc;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Runs `body` in a child process; its exit code, or -1 when it did not finish
// within `timeout` (it is then killed): a call that blocks fails the test
// instead of hanging it.
int finishes_within(const std::function<int()>& body, std::chrono::milliseconds timeout) {
    pid_t pid = test::fork_child(body);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            test::wait_child(pid);
            return -1;
        }
        std::this_thread::sleep_for(5ms);
    }
}

// A cache root with a directory and a file outside it, which nothing done
// through the cache may change.
struct Planted {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    fs::path outside = tmp / "outside";
    fs::path target = outside / "f";
    int64_t old_mtime = 0;
    CacheDir dir{root};

    Planted() {
        fs::create_directories(root);
        test::write_file(target, "outside");
        old_mtime = now_ns() - 3600'000'000'000;
        test::set_mtime(target, old_mtime);
    }
    bool target_untouched() const {
        return fs::is_regular_file(fs::symlink_status(target)) &&
               test::read_file(target) == "outside" && test::mtime_ns(target) == old_mtime;
    }
    size_t outside_count() const {
        size_t n = 0;
        for ([[maybe_unused]] const auto& e : fs::recursive_directory_iterator(outside)) ++n;
        return n;
    }
};

}  // namespace

// ------------------------------------------------------------------- links

TEST_CASE("CacheDir does not follow a linked directory below the root", "[cachedir]") {
    Planted p;
    fs::create_directory_symlink(p.outside, p.root / "a");
    const CacheDir& dir = p.dir;

    auto read = dir.read("a/f");
    REQUIRE_FALSE(read.has_value());
    CHECK_THAT(read.error().message,
               Catch::Contains((p.root / "a").string()) && Catch::Contains("symbolic link"));
    CHECK_FALSE(dir.open_read("a/f").has_value());
    CHECK_FALSE(dir.write("a/f", "new").has_value());
    CHECK_FALSE(dir.write("a/g", "new").has_value());
    CHECK_FALSE(dir.write("a/sub/g", "new").has_value());
    CHECK_FALSE(dir.open_rw("a/f").has_value());
    CHECK_FALSE(dir.open_rw("a/x.lock").has_value());
    dir.touch("a/f");
    dir.touch("a/new");
    CHECK_FALSE(dir.make_dir("a/sub").has_value());
    CHECK_FALSE(dir.open_dir("a").has_value());
    CHECK_FALSE(dir.open_dir("a/sub", true).has_value());
    CHECK_FALSE(dir.remove_file("a/f").has_value());
    (void)dir.remove_tree("a/f");  // nothing of the cache's there: success or error, no harm
    CHECK_FALSE(dir.rename("a/f", "stolen").has_value());
    test::write_file(p.root / "mine", "mine");
    CHECK_FALSE(dir.rename("mine", "a/f").has_value());
    CHECK(test::read_file(p.root / "mine") == "mine");
    CHECK_FALSE(dir.list("a").has_value());
    CHECK_FALSE(dir.stat("a/f").has_value());
    CHECK(dir.tree_bytes("a") == 0);
    CHECK(dir.tree_bytes("") == 4);  // "mine"; the link is not followed

    CHECK(p.target_untouched());
    CHECK(p.outside_count() == 1);

    auto st = dir.stat("a");
    REQUIRE(st.has_value());
    CHECK(st->is_symlink);
    CHECK_FALSE(st->is_dir);
    CHECK_FALSE(st->file.is_regular);
    auto items = dir.list("");
    REQUIRE(items.has_value());
    for (const auto& item : *items) {
        if (item.name == "a") CHECK((item.is_symlink && !item.is_dir && !item.is_regular));
    }

    // Removing the link removes the link, not what it points to.
    REQUIRE(dir.remove_tree("a").has_value());
    CHECK_FALSE(fs::exists(fs::symlink_status(p.root / "a")));
    CHECK(p.target_untouched());
    CHECK(p.outside_count() == 1);
}

TEST_CASE("CacheDir does not follow a link as the last component", "[cachedir]") {
    Planted p;
    const CacheDir& dir = p.dir;
    fs::create_symlink(p.target, p.root / "link");
    fs::create_symlink(p.outside / "new", p.root / "dangling");

    auto read = dir.read("link");
    REQUIRE_FALSE(read.has_value());
    CHECK_THAT(read.error().message,
               Catch::Contains((p.root / "link").string()) && Catch::Contains("symbolic link"));
    CHECK_FALSE(dir.open_read("link").has_value());
    auto rw = dir.open_rw("link");
    REQUIRE_FALSE(rw.has_value());
    CHECK_THAT(rw.error().message, Catch::Contains((p.root / "link").string()));
    CHECK_FALSE(dir.open_rw("dangling").has_value());
    dir.touch("link");
    dir.touch("dangling");
    CHECK(p.target_untouched());
    CHECK_FALSE(fs::exists(fs::symlink_status(p.outside / "new")));
    CHECK(fs::is_symlink(p.root / "link"));

    auto st = dir.stat("link");
    REQUIRE(st.has_value());
    CHECK(st->is_symlink);
    CHECK_FALSE(st->file.is_regular);

    SECTION("write replaces the link, not its target") {
        REQUIRE(dir.write("link", "new").has_value());
        CHECK(fs::is_regular_file(fs::symlink_status(p.root / "link")));
        CHECK(test::read_file(p.root / "link") == "new");
        REQUIRE(dir.write("dangling", "new").has_value());
        CHECK(fs::is_regular_file(fs::symlink_status(p.root / "dangling")));
        CHECK_FALSE(fs::exists(fs::symlink_status(p.outside / "new")));
        CHECK(p.target_untouched());
    }
    SECTION("remove_tree and remove_file remove the link, not its target") {
        REQUIRE(dir.remove_tree("link").has_value());
        CHECK_FALSE(fs::exists(fs::symlink_status(p.root / "link")));
        REQUIRE(dir.remove_file("dangling").has_value());
        CHECK_FALSE(fs::exists(fs::symlink_status(p.root / "dangling")));
        CHECK(p.target_untouched());
    }
    SECTION("rename moves the link itself") {
        REQUIRE(dir.rename("link", "sub/moved").has_value());
        CHECK(fs::is_symlink(p.root / "sub" / "moved"));
        CHECK(p.target_untouched());
    }
    CHECK(p.outside_count() == 1);
}

TEST_CASE("remove_tree removes links inside a tree, never what they point to", "[cachedir]") {
    Planted p;
    const CacheDir& dir = p.dir;
    test::write_file(p.root / "d" / "x", "x");
    test::write_file(p.root / "d" / "sub" / "y", "y");
    fs::create_directory_symlink(p.outside, p.root / "d" / "to-dir");
    fs::create_symlink(p.target, p.root / "d" / "sub" / "to-file");
    CHECK(dir.tree_bytes("d") == 2);
    REQUIRE(dir.remove_tree("d").has_value());
    CHECK_FALSE(fs::exists(p.root / "d"));
    CHECK(p.target_untouched());
    CHECK(p.outside_count() == 1);
    // Missing, or under a missing directory: nothing to do.
    CHECK(dir.remove_tree("d").has_value());
    CHECK(dir.remove_tree("no/such/thing").has_value());
}

TEST_CASE("the root itself is followed like any path the user names", "[cachedir]") {
    test::TempDir tmp;
    fs::create_directories(tmp / "real");
    fs::create_directory_symlink(tmp / "real", tmp / "root");
    CacheDir dir(tmp / "root");
    REQUIRE(dir.write("x/y", "through the root link").has_value());
    CHECK(test::read_file(tmp / "real" / "x" / "y") == "through the root link");
    CHECK(dir.read("x/y").value() == "through the root link");
    CHECK(dir.stat("")->is_dir);
}

TEST_CASE("cache paths must stay below the root", "[cachedir]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    CHECK_THROWS_AS(dir.read("../x"), InternalError);
    CHECK_THROWS_AS(dir.read("a/../../x"), InternalError);
    CHECK_THROWS_AS(dir.write("/etc/x", "x"), InternalError);
    CHECK_THROWS_AS(dir.remove_tree(".."), InternalError);
}

// ------------------------------------------------------ what files are read

TEST_CASE("CacheDir refuses a FIFO without blocking", "[cachedir]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    REQUIRE(::mkfifo((tmp / "fifo").c_str(), 0600) == 0);
    int code = finishes_within(
        [&] {
            auto read = dir.read("fifo");
            if (read || read.error().message.find("FIFO") == std::string::npos) return 1;
            if (dir.open_read("fifo")) return 2;
            auto rw = dir.open_rw("fifo");
            if (rw || rw.error().message.find("not a regular file") == std::string::npos) return 3;
            dir.touch("fifo");
            auto st = dir.stat("fifo");
            if (!st || st->file.is_regular || st->is_dir) return 4;
            if (dir.tree_bytes("") != 0) return 5;
            return 0;
        },
        10s);
    CHECK(code == 0);
    struct stat st;
    REQUIRE(::lstat((tmp / "fifo").c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("CacheDir reads at most max_bytes, and only regular files", "[cachedir]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    REQUIRE(dir.write("f", std::string(100, 'x')).has_value());
    auto small = dir.read("f", 99);
    REQUIRE_FALSE(small.has_value());
    CHECK_THAT(small.error().message,
               Catch::Contains((tmp / "f").string()) && Catch::Contains("larger than 99 bytes"));
    CHECK(dir.read("f", 100).value() == std::string(100, 'x'));
    CHECK(dir.read("f").value().size() == 100);

    fs::create_directories(tmp / "d");
    auto d = dir.read("d");
    REQUIRE_FALSE(d.has_value());
    CHECK_THAT(d.error().message, Catch::Contains("a directory"));
    auto missing = dir.read("no/such");
    REQUIRE_FALSE(missing.has_value());
    CHECK_THAT(missing.error().message, Catch::Contains((tmp / "no").string()));
    CHECK_FALSE(dir.read("d/none").has_value());
}

TEST_CASE("CacheDir writes whole files, creating directories, leaving no temporary", "[cachedir]") {
    test::TempDir tmp;
    CacheDir dir(tmp / "root");
    CHECK(dir.list("").value().empty());  // missing: nothing in it
    REQUIRE(dir.open_dir("", true).has_value());
    REQUIRE(dir.write("a/b/c", "one").has_value());
    REQUIRE(dir.write("a/b/c", "two").has_value());
    CHECK(test::read_file(tmp / "root" / "a" / "b" / "c") == "two");
    auto items = dir.list("a/b");
    REQUIRE(items.has_value());
    REQUIRE(items->size() == 1);
    CHECK((*items)[0].name == "c");
    CHECK((*items)[0].is_regular);

    REQUIRE(dir.make_dir("m/n").has_value());
    CHECK(fs::is_directory(tmp / "root" / "m" / "n"));
    CHECK_FALSE(dir.make_dir("m/n").has_value());  // made fresh, or an error

    auto fd = dir.open_rw("locks/x.lock");
    REQUIRE(fd.has_value());
    CHECK(fs::is_regular_file(tmp / "root" / "locks" / "x.lock"));

    int64_t old = now_ns() - 3600'000'000'000;
    test::set_mtime(tmp / "root" / "a" / "b" / "c", old);
    dir.touch("a/b/c");
    CHECK(test::mtime_ns(tmp / "root" / "a" / "b" / "c") > old);
    dir.touch("a/b/created");
    CHECK(fs::is_regular_file(tmp / "root" / "a" / "b" / "created"));
    dir.touch("no/such/dir/x");  // best effort: parents are not made
    CHECK_FALSE(fs::exists(tmp / "root" / "no"));
}

// -------------------------------------------------------------------- seal

namespace {

constexpr size_t kBig = 100 * 1024;  // above the 64 KiB that a cheap check hashes

struct SealFixture {
    test::TempDir tmp;
    CacheDir cache{tmp.path()};
    fs::path small = tmp / "d" / "small.txt";
    fs::path big = tmp / "d" / "sub" / "big.bin";
    fs::path lib = tmp / "d" / "libk.so";

    SealFixture() {
        test::write_file(small, "hello");
        test::write_file(big, std::string(kBig, 'b'));
        test::write_file(lib, std::string(kBig, 'l'));
    }
    std::expected<SealedContents, Error> check(CheckLevel level) const {
        return check_seal(cache, "d", level);
    }
};

// Rewrites `path` with the same size, its mtime put back.
void rewrite_same_size(const fs::path& path, char c) {
    std::string bytes = test::read_file(path);
    int64_t mtime = test::mtime_ns(path);
    bytes[bytes.size() / 2] = c;
    test::write_file(path, bytes);
    test::set_mtime(path, mtime);
}

}  // namespace

TEST_CASE("a seal records the size and SHA-256 of every file", "[cache]") {
    SealFixture f;
    auto seal = seal_dir(f.cache, "d", "libk.so");
    REQUIRE(seal.has_value());
    REQUIRE(seal->files.size() == 3);
    CHECK(seal->files["small.txt"].size == 5);
    CHECK(seal->files["small.txt"].sha256 == sha256_hex("hello"));
    CHECK(seal->files["sub/big.bin"].size == kBig);
    REQUIRE(seal->library.has_value());
    CHECK(seal->library->name == "libk.so");
    CHECK(seal->library->xxh128 == xxh128_hex(std::string(kBig, 'l')));

    auto read = Seal::read(f.cache, "d");
    REQUIRE(read.has_value());
    CHECK(read->files.size() == 3);
    CHECK(read->library->stat == seal->library->stat);

    auto cheap = f.check(CheckLevel::Cheap);
    REQUIRE(cheap.has_value());
    CHECK(cheap->at("small.txt") == "hello");  // small files come back, read once
    CHECK_FALSE(cheap->count("sub/big.bin"));
    CHECK(f.check(CheckLevel::Full).has_value());

    // Files added later, and last-use, are not part of it.
    test::write_file(f.tmp / "d" / "added", "later");
    test::write_file(f.tmp / "d" / "last-use", "");
    CHECK(f.check(CheckLevel::Full).has_value());
}

TEST_CASE("a seal catches what changed, at the level that can see it", "[cache]") {
    SealFixture f;
    REQUIRE(seal_dir(f.cache, "d", "libk.so").has_value());

    SECTION("a small file changed, same size: always") {
        rewrite_same_size(f.small, 'X');
        CHECK_THAT(f.check(CheckLevel::Cheap).error().message,
                   Catch::Contains("small.txt was modified after publishing"));
        CHECK_THAT(f.check(CheckLevel::Full).error().message,
                   Catch::Contains("small.txt was modified after publishing"));
    }
    SECTION("a big file truncated: by its size, at the cheap level too") {
        fs::resize_file(f.big, kBig - 1);
        CHECK_THAT(f.check(CheckLevel::Cheap).error().message,
                   Catch::Contains("sub/big.bin has " + std::to_string(kBig - 1) + " bytes, not " +
                                   std::to_string(kBig)));
        CHECK_FALSE(f.check(CheckLevel::Full).has_value());
    }
    SECTION("a big file rewritten with the same size: only at the full level") {
        rewrite_same_size(f.big, 'X');
        CHECK(f.check(CheckLevel::Cheap).has_value());
        CHECK_THAT(f.check(CheckLevel::Full).error().message,
                   Catch::Contains("sub/big.bin was modified after publishing"));
    }
    SECTION("the library rewritten with the same size and mtime: by its ladder") {
        rewrite_same_size(f.lib, 'X');
        CHECK_THAT(f.check(CheckLevel::Cheap).error().message,
                   Catch::Contains("library libk.so does not match its SHA-256"));
        CHECK_THAT(f.check(CheckLevel::Full).error().message,
                   Catch::Contains("library libk.so does not match its SHA-256"));
    }
    SECTION("the library truncated") {
        fs::resize_file(f.lib, 10);
        CHECK_THAT(f.check(CheckLevel::Cheap).error().message,
                   Catch::Contains("library libk.so has 10 bytes"));
    }
    SECTION("the library touched, same bytes: trusted, and the stamp refreshed") {
        int64_t later = test::mtime_ns(f.lib) + 5'000'000'000;
        test::set_mtime(f.lib, later);
        CHECK(f.check(CheckLevel::Cheap).has_value());
        CHECK(Seal::read(f.cache, "d")->library->stat.mtime_ns == later);
    }
    SECTION("a file removed") {
        fs::remove(f.small);
        CHECK_THAT(f.check(CheckLevel::Cheap).error().message,
                   Catch::Contains("small.txt is missing or unreadable"));
        fs::remove(f.big);
        test::write_file(f.small, "hello");
        CHECK_THAT(f.check(CheckLevel::Cheap).error().message,
                   Catch::Contains("sub/big.bin is missing"));
    }
    SECTION("a file replaced by a link to the same bytes") {
        test::write_file(f.tmp / "copy", "hello");
        fs::remove(f.small);
        fs::create_symlink(f.tmp / "copy", f.small);
        CHECK_FALSE(f.check(CheckLevel::Cheap).has_value());
        CHECK_FALSE(f.check(CheckLevel::Full).has_value());
    }
    SECTION("a seal that is missing or not a seal") {
        fs::remove(f.tmp / "d" / "stamp.json");
        CHECK_THAT(f.check(CheckLevel::Cheap).error().message,
                   Catch::Contains("stamp.json is missing or unreadable"));
        for (const std::string& text : std::vector<std::string>{
                 "{", "[]", R"({"size": 5, "mtime_ns": 1, "xxh128": "x"})",
                 R"({"seal": 2, "files": {}})",
                 R"({"seal": 1, "files": {"../x": {"size": 1, "sha256": ")" + std::string(64, '0') +
                     R"("}}})",
                 R"({"seal": 1, "files": {"/etc/passwd": {"size": 1, "sha256": ")" +
                     std::string(64, '0') + R"("}}})",
                 R"({"seal": 1, "files": {"a": {"size": 1, "sha256": "short"}}})",
                 R"({"seal": 1, "files": {}, "library": {"name": "libk.so"}})",
                 // members of another type than the writer writes
                 R"({"seal": "1", "files": {}})", R"({"seal": 1, "files": []})",
                 R"({"seal": 1, "files": {"a": {"size": "1", "sha256": ")" + std::string(64, '0') +
                     R"("}}})",
                 R"({"seal": 1, "files": {"a": {"size": -1, "sha256": ")" + std::string(64, '0') +
                     R"("}}})",
                 R"({"seal": 1, "files": {"a": 7}})",
                 R"({"seal": 1, "files": {"libk.so": {"size": 1, "sha256": ")" +
                     std::string(64, '0') +
                     R"("}}, "library": {"name": "libk.so", "size": 1, "mtime_ns": 1.5,
                     "ctime_ns": 1, "xxh128": "x"}})"}) {
            INFO(text);
            test::write_file(f.tmp / "d" / "stamp.json", text);
            CHECK_THAT(f.check(CheckLevel::Cheap).error().message,
                       Catch::Contains("stamp.json is not a seal"));
        }
    }
}

TEST_CASE("sealing refuses a link or a FIFO in the directory", "[cache]") {
    SealFixture f;
    SECTION("a link") {
        fs::create_symlink(f.small, f.tmp / "d" / "sub" / "link");
        auto seal = seal_dir(f.cache, "d", std::nullopt);
        REQUIRE_FALSE(seal.has_value());
        CHECK_THAT(seal.error().message, Catch::Contains("link is not a regular file"));
    }
    SECTION("a FIFO") {
        REQUIRE(::mkfifo((f.tmp / "d" / "fifo").c_str(), 0600) == 0);
        auto seal = seal_dir(f.cache, "d", std::nullopt);
        REQUIRE_FALSE(seal.has_value());
        CHECK_THAT(seal.error().message, Catch::Contains("fifo is not a regular file"));
    }
    SECTION("a library that is not there") {
        auto seal = seal_dir(f.cache, "d", "libmissing.so");
        REQUIRE_FALSE(seal.has_value());
        CHECK_THAT(seal.error().message, Catch::Contains("libmissing.so is missing"));
    }
    CHECK_FALSE(fs::exists(f.tmp / "d" / "stamp.json"));
}

TEST_CASE("touch without create leaves a missing file missing and dates an existing one",
          "[cachedir]") {
    test::TempDir tmp;
    CacheDir dir(tmp.path());
    dir.touch("r/missing.json", false);
    CHECK_FALSE(fs::exists(tmp.path() / "r" / "missing.json"));
    REQUIRE(dir.write("r/there.json", "{}"));
    const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
    fs::last_write_time(tmp.path() / "r" / "there.json", old);
    dir.touch("r/there.json", false);
    CHECK(fs::last_write_time(tmp.path() / "r" / "there.json") > old);
}
