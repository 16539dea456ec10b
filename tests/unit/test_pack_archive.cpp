// A pack as one file (store/pack_archive.hpp, store/zip_writer.hpp): the
// wheel is a ZIP that Python's zipfile and pip take, holding the pack's files
// byte for byte under bekc_packs/<name>/ and a RECORD that hashes each; the
// tarball unpacks to a directory named after the pack. What is local to a
// machine stays out, and a pack holding a link is refused.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <map>

#include "../helpers/temp_dir.hpp"
#include "run/process.hpp"
#include "run/runner.hpp"
#include "store/hash.hpp"
#include "store/pack_archive.hpp"
#include "store/zip_writer.hpp"
#include "toolchain/tools.hpp"
#include "util/version.hpp"

using namespace bekc;

namespace {

const std::string kLibrary = std::string(
    "\x7f"
    "ELF\0\1\2 binary",
    14);

// A pack made by hand: a marker with a "pack" object, one entry's files, and
// what a machine keeps for itself (tmp/, locks/, stats.json).
void write_pack(const fs::path& dir, const std::string& name) {
    test::write_file(dir / "bekc-cache.json",
                     std::string(R"({"bekc_cache": 1, "pack": {"name": ")") + name +
                         R"(", "version": "1.0", "bekc_version": ")" + kVersion +
                         R"(", "cuda": "", "archs": [], "modules": ["demo"]}})");
    test::write_file(dir / "CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n");
    test::write_file(dir / "entries/ab/cdef/libdemo.so", kLibrary);
    test::write_file(dir / "entries/ab/cdef/manifest.json", "{\"name\": \"demo\"}\n");
    test::write_file(dir / "tmp/stage/half", "x");
    test::write_file(dir / "locks/ab/cdef.lock", "");
    test::write_file(dir / "stats.json", "{}");
}

uint32_t le32_at(const std::string& s, size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
    return v;
}

uint16_t le16_at(const std::string& s, size_t at) {
    return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) |
                                 (static_cast<uint8_t>(s[at + 1]) << 8));
}

// The files of a stored-only ZIP, read through its central directory; each
// entry's CRC-32 is checked against its bytes.
std::map<std::string, std::string> unzip(const std::string& zip) {
    size_t end = zip.rfind(std::string("PK\5\6"));
    REQUIRE(end != std::string::npos);
    size_t count = le16_at(zip, end + 10), at = le32_at(zip, end + 16);
    std::map<std::string, std::string> files;
    for (size_t i = 0; i < count; ++i) {
        REQUIRE(le32_at(zip, at) == 0x02014b50);
        uint32_t crc = le32_at(zip, at + 16), size = le32_at(zip, at + 24);
        size_t name_size = le16_at(zip, at + 28), local = le32_at(zip, at + 42);
        std::string name = zip.substr(at + 46, name_size);
        REQUIRE(le32_at(zip, local) == 0x04034b50);
        size_t data = local + 30 + le16_at(zip, local + 26) + le16_at(zip, local + 28);
        files[name] = zip.substr(data, size);
        CHECK(crc32(files[name]) == crc);
        at += 46 + name_size + le16_at(zip, at + 30) + le16_at(zip, at + 32);
    }
    return files;
}

Command argv_command(std::vector<std::string> argv) {
    Command c;
    c.argv = std::move(argv);
    return c;
}

// The repository's virtual environment's python: .venv/bin/python in the
// nearest directory above this test binary that has one; empty when none does.
fs::path venv_python() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    for (fs::path dir = exe.parent_path(); dir.has_relative_path(); dir = dir.parent_path())
        if (fs::path python = dir / ".venv/bin/python"; ::access(python.c_str(), X_OK) == 0)
            return python;
    return {};
}

}  // namespace

TEST_CASE("crc32 and base64url match their published values", "[pack_archive]") {
    CHECK(crc32("") == 0);
    CHECK(crc32("123456789") == 0xcbf43926u);
    CHECK(crc32("6789", crc32("12345")) == 0xcbf43926u);
    CHECK(base64url_nopad("") == "");
    CHECK(base64url_nopad("f") == "Zg");
    CHECK(base64url_nopad("fo") == "Zm8");
    CHECK(base64url_nopad("foo") == "Zm9v");
    CHECK(base64url_nopad("\xfb\xff") == "-_8");
}

TEST_CASE("a pack's wheel holds its files byte for byte and a RECORD of them", "[pack_archive]") {
    test::TempDir tmp;
    write_pack(tmp / "pack", "demo.v2");
    fs::create_directories(tmp / "out");
    auto wheel = write_pack_wheel(tmp / "pack", {"demo.v2", "1.0rc1", "linux_x86_64"}, tmp / "out");
    REQUIRE(wheel);
    CHECK(wheel->filename() == "bekc_pack_demo_v2-1.0rc1-py3-none-linux_x86_64.whl");
    // Only the wheel: no temporary left beside it.
    CHECK(std::distance(fs::directory_iterator(tmp / "out"), fs::directory_iterator()) == 1);
    auto files = unzip(test::read_file(*wheel));
    const std::string info = "bekc_pack_demo_v2-1.0rc1.dist-info/";
    std::vector<std::string> names;
    for (const auto& [name, bytes] : files) names.push_back(name);
    CHECK(names == std::vector<std::string>{
                       "bekc_pack_demo_v2-1.0rc1.dist-info/METADATA",
                       "bekc_pack_demo_v2-1.0rc1.dist-info/RECORD",
                       "bekc_pack_demo_v2-1.0rc1.dist-info/WHEEL",
                       "bekc_packs/demo.v2/CACHEDIR.TAG",
                       "bekc_packs/demo.v2/bekc-cache.json",
                       "bekc_packs/demo.v2/entries/ab/cdef/libdemo.so",
                       "bekc_packs/demo.v2/entries/ab/cdef/manifest.json",
                   });
    CHECK(files["bekc_packs/demo.v2/entries/ab/cdef/libdemo.so"] == kLibrary);
    CHECK(files[info + "WHEEL"] == std::string("Wheel-Version: 1.0\nGenerator: bekc ") + kVersion +
                                       "\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n");
    CHECK(files[info + "METADATA"].starts_with(
        "Metadata-Version: 2.1\nName: bekc_pack_demo_v2\nVersion: 1.0rc1\nSummary: "));
    const std::string& record = files[info + "RECORD"];
    CHECK(record.find("bekc_packs/demo.v2/entries/ab/cdef/libdemo.so,sha256=") !=
          std::string::npos);
    CHECK(record.find(",14\n") != std::string::npos);
    CHECK(record.ends_with(info + "RECORD,,\n"));
    SECTION("the same pack gives the same bytes") {
        fs::create_directories(tmp / "again");
        auto again =
            write_pack_wheel(tmp / "pack", {"demo.v2", "1.0rc1", "linux_x86_64"}, tmp / "again");
        REQUIRE(again);
        CHECK(test::read_file(*again) == test::read_file(*wheel));
    }
    SECTION("Python's zipfile and pip take it, and pip installs the files as they are") {
        fs::path python = venv_python();
        if (python.empty()) {
            WARN("no .venv/bin/python beside the build directory");
            return;
        }
        ProcessRunner runner;
        auto tested =
            runner.run_one(argv_command({python.string(), "-m", "zipfile", "-t", wheel->string()}));
        CHECK(tested.ok());
        auto installed = runner.run_one(
            argv_command({python.string(), "-m", "pip", "install", "--no-deps", "--no-index",
                          "--no-compile", "--target", (tmp / "site").string(), wheel->string()}));
        INFO(installed.output);
        REQUIRE(installed.ok());
        CHECK(test::read_file(tmp / "site/bekc_packs/demo.v2/entries/ab/cdef/libdemo.so") ==
              kLibrary);
        CHECK(test::read_file(tmp / "site/bekc_packs/demo.v2/bekc-cache.json") ==
              test::read_file(tmp / "pack/bekc-cache.json"));
        CHECK(!fs::exists(tmp / "site/bekc_packs/demo.v2/stats.json"));
    }
}

TEST_CASE("a wheel refuses a bad name, version or tag, a plain cache and a link",
          "[pack_archive]") {
    test::TempDir tmp;
    write_pack(tmp / "pack", "demo");
    auto refused = [&](const PackWheel& w, const std::string& says) {
        auto wheel = write_pack_wheel(tmp / "pack", w, tmp.path());
        REQUIRE(!wheel);
        CHECK_THAT(wheel.error().message, Catch::Contains(says));
        return wheel.error().kind;
    };
    CHECK(refused({"de-mo", "1.0", "any"}, "may hold only letters, digits, '.' and '_'") ==
          ErrorKind::Usage);
    CHECK(refused({"..", "1.0", "any"}, "starts with '.'") == ErrorKind::Usage);
    CHECK(refused({"demo", "1.0-beta", "any"}, "PEP 440") == ErrorKind::Usage);
    CHECK(refused({"demo", "", "any"}, "PEP 440") == ErrorKind::Usage);
    CHECK(refused({"demo", "1.0", "linux/x86"}, "platform tag") == ErrorKind::Usage);
    test::write_file(tmp / "plain/bekc-cache.json", R"({"bekc_cache": 1})");
    CHECK(!write_pack_wheel(tmp / "plain", {"demo", "1.0", "any"}, tmp.path()));
    fs::create_symlink("/etc/passwd", tmp / "pack/entries/ab/cdef/extra");
    CHECK(refused({"demo", "1.0", "any"}, "is a symbolic link") == ErrorKind::Cache);
    // Nothing written in either case.
    for (const auto& item : fs::directory_iterator(tmp.path()))
        CHECK(item.path().extension() != ".whl");
}

TEST_CASE("a pack's tarball unpacks to a directory named after the pack", "[pack_archive]") {
    auto tar = ToolLookup::system().find("tar");
    if (!tar) {
        WARN("no tar on PATH");
        return;
    }
    test::TempDir tmp;
    write_pack(tmp / "somewhere", "demo");
    ProcessRunner runner;
    auto out = write_pack_tarball(tmp / "somewhere", tmp / "demo-1.0.tar.gz", runner, *tar);
    REQUIRE(out);
    CHECK(*out == tmp / "demo-1.0.tar.gz");
    fs::create_directories(tmp / "x");
    auto r = runner.run_one(
        argv_command({tar->string(), "-xzf", out->string(), "-C", (tmp / "x").string()}));
    REQUIRE(r.ok());
    CHECK(test::read_file(tmp / "x/demo/entries/ab/cdef/libdemo.so") == kLibrary);
    CHECK(test::read_file(tmp / "x/demo/bekc-cache.json") ==
          test::read_file(tmp / "somewhere/bekc-cache.json"));
    CHECK(!fs::exists(tmp / "x/demo/tmp"));
    CHECK(!fs::exists(tmp / "x/demo/locks"));
    CHECK(!fs::exists(tmp / "x/demo/stats.json"));
    std::vector<fs::path> top;
    for (const auto& item : fs::directory_iterator(tmp.path())) top.push_back(item.path());
    CHECK(top.size() == 3);  // somewhere, x and the tarball: no temporary left
}
