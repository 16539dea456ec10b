#include <fcntl.h>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "util/fs.hpp"

using namespace bekc;

TEST_CASE("read_file reads whole files of every size, within the limit", "[fs]") {
    test::TempDir tmp;
    for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{70000}}) {
        std::string text(size, 'x');
        for (size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + i % 26);
        test::write_file(tmp / "f", text);
        CHECK(read_file(tmp / "f").value() == text);
        CHECK(read_file(tmp / "f", ReadOptions{.max_bytes = size}).value() == text);
        if (size == 0) continue;
        auto over = read_file(tmp / "f", ReadOptions{.max_bytes = size - 1});
        REQUIRE_FALSE(over.has_value());
        CHECK_THAT(over.error().message,
                   Catch::Contains("larger than " + std::to_string(size - 1)));
    }
}

TEST_CASE("read_file reads a file whose size says 0 to its end", "[fs]") {
    // /proc files report size 0 and have content.
    auto text = read_file("/proc/self/status");
    REQUIRE(text.has_value());
    CHECK_THAT(*text, Catch::Contains("Name:"));
    auto small = read_file("/proc/self/status", ReadOptions{.max_bytes = 8});
    REQUIRE_FALSE(small.has_value());
    CHECK_THAT(small.error().message, Catch::Contains("larger than 8 bytes"));
}

TEST_CASE("open_regular_file_at gives the stat it checked", "[fs]") {
    test::TempDir tmp;
    test::write_file(tmp / "f", "12345");
    auto f = open_regular_file_at(AT_FDCWD, tmp / "f", tmp / "f", {});
    REQUIRE(f.has_value());
    CHECK(f->fd.valid());
    CHECK(f->st.st_size == 5);
    auto dir = open_regular_file_at(AT_FDCWD, tmp.path(), tmp.path(), {});
    REQUIRE_FALSE(dir.has_value());
    CHECK_THAT(dir.error().message, Catch::Contains("a directory"));
}

TEST_CASE("RealPaths resolves as weakly_canonical does, links and missing parts included", "[fs]") {
    test::TempDir tmp;
    fs::path real = fs::canonical(tmp.path());
    test::write_file(real / "a" / "b" / "h.h", "h");
    test::write_file(real / "c" / "x.h", "x");
    fs::create_directory_symlink(real / "a" / "b", real / "abs");  // absolute
    fs::create_directory_symlink("../a/b", real / "c" / "rel");    // relative, with ..
    fs::create_directory_symlink("rel", real / "c" / "chain");     // a link to a link
    fs::create_symlink("../c/x.h", real / "a" / "file_link.h");    // the last component
    fs::create_symlink(real / "nowhere", real / "dangling");       // points at nothing
    fs::create_symlink("loop2", real / "loop1");
    fs::create_symlink("loop1", real / "loop2");
    std::vector<fs::path> paths = {
        real / "a" / "b" / "h.h",
        real / "abs" / "h.h",
        real / "c" / "rel" / "h.h",
        real / "c" / "chain" / "h.h",
        real / "c" / "chain" / ".." / "x.h",  // .. after a link: the link's target's parent
        real / "a" / "file_link.h",
        real / "abs" / "missing" / "deeper.h",
        real / "dangling" / "h.h",
        real / "dangling",
        real / "c" / "x.h" / "not_a_dir.h",
        real / "missing" / ".." / "a" / "b" / "h.h",
        real / "a" / "b" / "",
        fs::path("/"),
    };
    RealPaths resolver;
    for (int round = 0; round < 2; ++round) {  // the second from the memo
        for (const auto& p : paths) {
            INFO(p.string());
            std::error_code ec;
            CHECK(resolver.resolve(p) == fs::weakly_canonical(p, ec));
        }
    }
    // A loop is an error, as for weakly_canonical.
    std::error_code ec;
    CHECK(fs::weakly_canonical(real / "loop1" / "x", ec).empty());
    CHECK(resolver.resolve(real / "loop1" / "x").empty());
    CHECK(resolver.resolve(real / "abs" / "h.h") == real / "a" / "b" / "h.h");
}

TEST_CASE("physical_normal: '..' leaves where the link before it leads, as the kernel's does",
          "[fs]") {
    test::TempDir tmp;
    fs::path real = fs::canonical(tmp.path());
    test::write_file(real / "real" / "src" / "k.cpp", "k");
    test::write_file(real / "real" / "common" / "x.h", "x");
    fs::create_directories(real / "proj" / "sub");
    fs::create_directory_symlink("../real/src", real / "proj" / "src");
    fs::create_directory_symlink(real / "proj", real / "alias");  // a link to a plain directory
    PhysicalPaths paths;
    for (int round = 0; round < 2; ++round) {  // the second from the memo
        // Lexically proj/common/x.h; the kernel opens real/common/x.h.
        CHECK(paths.normal(real / "proj/src/../common/x.h") == real / "real/common/x.h");
        CHECK(paths.normal(real / "proj/src/./../../real/src/k.cpp") == real / "real/src/k.cpp");
        // A link that no '..' follows keeps its spelling.
        CHECK(paths.normal(real / "proj/src/k.cpp") == real / "proj/src/k.cpp");
        CHECK(paths.normal(real / "alias/src/k.cpp") == real / "alias/src/k.cpp");
        // '..' after a plain directory, below a link: the link's own directory.
        CHECK(paths.normal(real / "alias/sub/../src/k.cpp") == real / "alias/src/k.cpp");
        // What does not exist, and '..' at the root, go lexically.
        CHECK(paths.normal(real / "missing/../real/common/x.h") == real / "real/common/x.h");
        CHECK(paths.normal("/../usr/./include/") == fs::path("/usr/include/"));
    }
    CHECK(physical_normal(real / "proj/src/../common") == real / "real/common");
    CHECK(physical_normal("rel/../x.h") == fs::current_path() / "x.h");
}

TEST_CASE("path_is_under: a directory and what is below it, by components", "[fs]") {
    CHECK(path_is_under("/a/b/c.h", "/a/b"));
    CHECK(path_is_under("/a/b/c.h", "/a/b/"));
    CHECK(path_is_under("/a/b", "/a/b"));
    CHECK(path_is_under("/a/b/", "/a/b"));
    CHECK(path_is_under("/a/b/c.h", "/"));
    CHECK_FALSE(path_is_under("/a/bc/d.h", "/a/b"));  // a prefix of a name is not a parent
    CHECK_FALSE(path_is_under("/a", "/a/b"));
    // Spellings with "." and "..": decided by their components.
    CHECK(path_is_under("/a/./b/c.h", "/a/b"));
    CHECK_FALSE(path_is_under("/a/b/../c.h", "/a/b"));
    CHECK(path_is_under("x/y.h", "x"));
    CHECK_FALSE(path_is_under("xy/z.h", "x"));
}
