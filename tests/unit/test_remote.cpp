// The remote cache's parts that need no server: the entry archive, the remote
// direct records, the configuration, and how curl is called and understood.
// tests/integration/test_remote_cache.py runs the whole against nginx.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "../helpers/env.hpp"
#include "../helpers/temp_dir.hpp"
#include "remote/entry_archive.hpp"
#include "remote/http.hpp"
#include "remote/remote_cache.hpp"
#include "remote/remote_record.hpp"
#include "store/hash.hpp"
#include "store/key.hpp"
#include "toolchain/tools.hpp"

using namespace bekc;
using test::TempDir;
using test::write_file;

using test::env_of;

namespace {

// A ustar header as a hostile or broken archive would have it; the checksum
// is right unless `bad_checksum`.
std::string ustar_header(const std::string& name, size_t size, char type = '0',
                         const std::string& prefix = "", bool bad_checksum = false) {
    std::string h(512, '\0');
    std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
    std::memcpy(h.data() + 100, "0000644", 7);
    std::memcpy(h.data() + 108, "0000000", 7);
    std::memcpy(h.data() + 116, "0000000", 7);
    std::string sz = fmt::format("{:011o}", size);
    std::memcpy(h.data() + 124, sz.data(), 11);
    std::memcpy(h.data() + 136, "00000000000", 11);
    h[156] = type;
    std::memcpy(h.data() + 257, "ustar", 6);
    std::memcpy(h.data() + 263, "00", 2);
    std::memcpy(h.data() + 345, prefix.data(), std::min<size_t>(prefix.size(), 155));
    unsigned sum = 0;
    for (size_t i = 0; i < 512; ++i)
        sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    if (bad_checksum) ++sum;
    std::string s = fmt::format("{:06o}", sum);
    std::memcpy(h.data() + 148, s.data(), 6);
    h[154] = '\0';
    h[155] = ' ';
    return h;
}

std::string member(const std::string& name, const std::string& data, char type = '0') {
    std::string m = ustar_header(name, data.size(), type) + data;
    m.resize((m.size() + 511) / 512 * 512, '\0');
    return m;
}

const std::string kEnd(1024, '\0');

std::expected<std::vector<std::string>, Error> unpack(const TempDir& tmp,
                                                      const std::string& bytes) {
    write_file(tmp / "in.tar", bytes);
    fs::create_directories(tmp / "out");
    return read_entry_archive(tmp / "in.tar", tmp / "out");
}

std::string key_of(const std::string& seed) {
    return KeyBuilder("test").add("seed", seed).digest();
}

ProcessResult exited(int code, std::string output) {
    ProcessResult r;
    r.status = ProcessStatus::Exited;
    r.exit_code = code;
    r.output = std::move(output);
    return r;
}

}  // namespace

// --------------------------------------------------------------------------- archive
TEST_CASE("entry archives round-trip every size around the block boundary", "[remote]") {
    TempDir tmp;
    std::vector<std::string> names;
    std::map<std::string, std::string> content;
    for (size_t size : {0, 1, 511, 512, 513, 70000}) {
        std::string name = fmt::format("f{}.bin", size);
        std::string bytes;
        for (size_t i = 0; i < size; ++i) bytes += static_cast<char>((i * 7 + size) & 0xff);
        write_file(tmp / "src" / name, bytes);
        names.push_back(name);
        content[name] = bytes;
    }
    REQUIRE(write_entry_archive(tmp / "src", names, tmp / "a.tar"));
    CHECK(fs::file_size(tmp / "a.tar") % 512 == 0);
    fs::create_directories(tmp / "out");
    auto got = read_entry_archive(tmp / "a.tar", tmp / "out");
    REQUIRE(got);
    CHECK(*got == names);
    for (const auto& [name, bytes] : content) CHECK(test::read_file(tmp / "out" / name) == bytes);

    SECTION("the same files pack to the same bytes") {
        REQUIRE(write_entry_archive(tmp / "src", names, tmp / "b.tar"));
        CHECK(test::read_file(tmp / "a.tar") == test::read_file(tmp / "b.tar"));
    }
    SECTION("tar reads it") {
        auto tar = ToolLookup::system().find("tar");
        if (!tar) {
            WARN("no tar on PATH");
            return;
        }
        fs::create_directories(tmp / "tar-out");
        Command c;
        c.argv = {tar->string(), "-xf", (tmp / "a.tar").string(), "-C", (tmp / "tar-out").string()};
        auto r = run_process(c);
        REQUIRE(r.ok());
        for (const auto& [name, bytes] : content)
            CHECK(test::read_file(tmp / "tar-out" / name) == bytes);
    }
}

TEST_CASE("the archive writer refuses names that are not plain", "[remote]") {
    TempDir tmp;
    write_file(tmp / "src" / "a", "x");
    CHECK_FALSE(write_entry_archive(tmp / "src", {"../a"}, tmp / "a.tar"));
    CHECK_FALSE(write_entry_archive(tmp / "src", {"missing"}, tmp / "a.tar"));
    CHECK_FALSE(is_plain_member_name(""));
    CHECK_FALSE(is_plain_member_name(".."));
    CHECK_FALSE(is_plain_member_name("a/b"));
    CHECK_FALSE(is_plain_member_name("a\nb"));
    CHECK_FALSE(is_plain_member_name(std::string(100, 'a')));
    CHECK(is_plain_member_name("libk.so"));
}

TEST_CASE("the archive reader rejects what a hostile or broken remote sends", "[remote]") {
    TempDir tmp;
    std::string good = member("manifest.json", "{}");
    auto rejected = [&](const std::string& bytes, const std::string& why) {
        auto r = unpack(tmp, bytes);
        REQUIRE_FALSE(r);
        CHECK_THAT(r.error().message, Catch::Contains(why));
    };
    SECTION("parent directory") {
        rejected(good + member("../escaped", "evil") + kEnd, "not a plain file name");
    }
    SECTION("absolute path") {
        rejected(member((tmp / "abs").string(), "evil") + kEnd, "not a plain file name");
    }
    SECTION("subdirectory") {
        rejected(member("sub/x", "evil") + kEnd, "not a plain file name");
    }
    SECTION("name in the prefix field") {
        std::string h = ustar_header("x", 0, '0', "dir");
        rejected(h + kEnd, "not a plain file name");
    }
    SECTION("symlink") {
        rejected(member("link", "", '2') + kEnd, "not a regular file");
    }
    SECTION("hard link") {
        rejected(member("link", "", '1') + kEnd, "not a regular file");
    }
    SECTION("pax header") {
        rejected(member("pax", "30 path=../../x\n", 'x') + kEnd, "not a regular file");
    }
    SECTION("directory") {
        rejected(member("d", "", '5') + kEnd, "not a regular file");
    }
    SECTION("duplicate") {
        rejected(good + good + kEnd, "appears twice");
    }
    SECTION("bad checksum") {
        rejected(ustar_header("a", 0, '0', "", true) + kEnd, "bad checksum");
    }
    SECTION("not ustar") {
        rejected(std::string(512, 'x') + kEnd, "not a ustar archive");
    }
    SECTION("truncated data") {
        rejected(ustar_header("a", 4096) + std::string(100, 'a'), "truncated");
    }
    SECTION("no end marker") {
        rejected(good, "truncated");
    }
    SECTION("empty file") {
        rejected("", "truncated");
    }
    SECTION("too many members") {
        std::string many;
        for (size_t i = 0; i <= kMaxArchiveMembers; ++i) many += member(fmt::format("m{}", i), "");
        rejected(many + kEnd, "too many members");
    }
    CHECK_FALSE(fs::exists(tmp.path() / "escaped"));
    CHECK_FALSE(fs::exists(tmp.path().parent_path() / "escaped"));
}

TEST_CASE("the archive reader bounds every member and the total", "[remote]") {
    TempDir tmp;
    fs::create_directories(tmp / "out");
    auto read = [&](const std::string& bytes, uint64_t max) {
        write_file(tmp / "in.tar", bytes);
        fs::remove_all(tmp / "out");
        fs::create_directories(tmp / "out");
        return read_entry_archive(tmp / "in.tar", tmp / "out", ArchiveLimits{max});
    };
    std::string a = member("a", std::string(600, 'a')), b = member("b", std::string(600, 'b'));
    CHECK(read(a + b + kEnd, 1200));
    SECTION("one member over the limit is refused before it is written") {
        // The header claims 1 GiB; nothing of it may reach the disk.
        auto r = read(ustar_header("huge", uint64_t{1} << 30) + std::string(4096, 'h'), 1 << 20);
        REQUIRE_FALSE(r);
        CHECK_THAT(r.error().message, Catch::Contains("past its limit of 1048576 bytes"));
        CHECK_FALSE(fs::exists(tmp / "out" / "huge"));
    }
    SECTION("members together over the limit") {
        auto r = read(a + b + kEnd, 1199);
        REQUIRE_FALSE(r);
        CHECK_THAT(r.error().message, Catch::Contains("archive member 'b'"));
        CHECK_FALSE(fs::exists(tmp / "out" / "b"));
    }
    SECTION("the default is 256 MiB") {
        CHECK(ArchiveLimits{}.max_bytes == kDefaultMaxEntryBytes);
        CHECK(kDefaultMaxEntryBytes == uint64_t{256} << 20);
    }
    SECTION("a deadline that has passed stops the unpacking") {
        write_file(tmp / "in.tar", a + kEnd);
        fs::create_directories(tmp / "late");
        auto r = read_entry_archive(tmp / "in.tar", tmp / "late",
                                    ArchiveLimits{1 << 20, std::chrono::steady_clock::now()});
        REQUIRE_FALSE(r);
        CHECK_THAT(r.error().message, Catch::Contains("time limit"));
    }
}

TEST_CASE("archives are read from and written of regular files only, without waiting", "[remote]") {
    TempDir tmp;
    fs::create_directories(tmp / "src");
    fs::create_directories(tmp / "out");
    REQUIRE(::mkfifo((tmp / "src" / "fifo").c_str(), 0600) == 0);
    REQUIRE(::mkfifo((tmp / "in.tar").c_str(), 0600) == 0);
    auto w = write_entry_archive(tmp / "src", {"fifo"}, tmp / "a.tar");
    REQUIRE_FALSE(w);
    CHECK_THAT(w.error().message, Catch::Contains("not a regular file"));
    auto r = read_entry_archive(tmp / "in.tar", tmp / "out");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("not a regular file"));
}

TEST_CASE("the archive reader never writes through a symlink already in the directory",
          "[remote]") {
    TempDir tmp;
    fs::create_directories(tmp / "out");
    write_file(tmp / "target", "keep");
    fs::create_symlink(tmp / "target", tmp / "out" / "a");
    write_file(tmp / "in.tar", member("a", "evil") + kEnd);
    CHECK_FALSE(read_entry_archive(tmp / "in.tar", tmp / "out"));
    CHECK(test::read_file(tmp / "target") == "keep");
}

// --------------------------------------------------------------------------- records
TEST_CASE("remote direct records round-trip, merge and are validated", "[remote]") {
    DirectInputs a{key_of("a"), {{"/inc/a.h", sha256_hex("a")}}, {"/inc/first/a.h"}};
    DirectInputs b{key_of("b"), {{"/inc/a.h", sha256_hex("b")}}, {}};
    std::string text = render_remote_records({a, b});
    auto back = parse_remote_records(text);
    REQUIRE(back);
    REQUIRE(back->size() == 2);
    CHECK((*back)[0].key == a.key);
    CHECK((*back)[0].dependencies[0].path == "/inc/a.h");
    CHECK((*back)[0].dependencies[0].sha256 == sha256_hex("a"));
    CHECK((*back)[0].must_not_exist == std::vector<fs::path>{"/inc/first/a.h"});

    auto merged = merge_remote_records({a, b}, b);
    REQUIRE(merged.size() == 2);
    CHECK(merged[0].key == b.key);
    CHECK(merged[1].key == a.key);
    std::vector<DirectInputs> many;
    for (int i = 0; i < 12; ++i) many.push_back({key_of(std::to_string(i)), {}, {}});
    CHECK(merge_remote_records(many, a).size() == kMaxDirectRecords);

    auto bad = [](const std::string& doc) { return !parse_remote_records(doc); };
    std::string key = key_of("k"), sha = sha256_hex("x");
    auto doc = [&](const std::string& k, const std::string& path, const std::string& s) {
        return fmt::format(
            R"({{"format":1,"records":[{{"key":"{}","files":[{{"path":"{}","sha256":"{}"}}],"absent":[]}}]}})",
            k, path, s);
    };
    CHECK_FALSE(bad(doc(key, "/a.h", sha)));
    CHECK(bad(doc("../../etc", "/a.h", sha)));
    CHECK(bad(doc(key, "a.h", sha)));
    CHECK(bad(doc(key, "/x/../a.h", sha)));
    CHECK(bad(doc(key, "/a.h", "abc")));
    CHECK(bad(doc(key, "/a.h", std::string(64, 'G'))));
    CHECK(bad(R"({"format":2,"records":[]})"));
    CHECK(bad(R"({"format":"1","records":[]})"));
    CHECK(bad(R"({"format":1})"));
    CHECK(bad("[]"));
    CHECK(bad("<html>"));
}

TEST_CASE("remote direct records keep paths that are not UTF-8 byte for byte", "[remote]") {
    // A Linux file name need not be UTF-8: a Latin-1 directory, b"caf\xe9".
    DirectInputs a{key_of("a"),
                   {{"/src/caf\xe9/a.h", sha256_hex("a")}},
                   {"/src/caf\xe9/first/a.h", "$BEKC_BASE_DIR/\xff.h"}};
    auto back = parse_remote_records(render_remote_records({a}));
    REQUIRE(back);
    REQUIRE(back->size() == 1);
    CHECK((*back)[0].dependencies[0].path == "/src/caf\xe9/a.h");
    CHECK((*back)[0].must_not_exist == a.must_not_exist);
}

TEST_CASE("a remote record is used only when this machine's files match it", "[remote]") {
    TempDir tmp;
    fs::path h = tmp / "a.h", shadow = tmp / "first" / "a.h";
    write_file(h, "one");
    DirectInputs old_header{key_of("old"), {{h, sha256_hex("zero")}}, {}};
    DirectInputs current{key_of("cur"), {{h, sha256_hex("one")}}, {shadow}};
    auto m = match_local_files({old_header, current});
    REQUIRE(m);
    REQUIRE(m->record);
    CHECK(m->record->key == current.key);
    CHECK(m->refused.empty());
    auto none = [](const std::vector<DirectInputs>& records) {
        auto r = match_local_files(records);
        return r && !r->record && r->refused.empty();
    };

    SECTION("a shadowing file that now exists") {
        write_file(shadow, "");
        CHECK(none({current}));
    }
    SECTION("a dangling symlink shadows too") {
        fs::create_directories(shadow.parent_path());
        fs::create_symlink(tmp / "nowhere", shadow);
        CHECK(none({current}));
    }
    SECTION("a missing dependency") {
        fs::remove(h);
        CHECK(none({current}));
    }
}

// The paths come from the remote: what they name must not hang or flood the
// build that hashes them.
TEST_CASE("a record naming a FIFO, a device or a directory does not match, at once", "[remote]") {
    TempDir tmp;
    fs::path fifo = tmp / "fifo.h";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    fs::path dir = tmp / "dir.h";
    fs::create_directories(dir);
    write_file(tmp / "ok.h", "ok");
    // The SHA-256 of nothing: what an empty read would give.
    std::string empty = sha256_hex("");
    auto start = std::chrono::steady_clock::now();
    for (const fs::path& path : {fifo, fs::path("/dev/zero"), fs::path("/dev/null"), dir}) {
        INFO(path.string());
        DirectInputs record{key_of("k"), {{tmp / "ok.h", sha256_hex("ok")}, {path, empty}}, {}};
        auto m = match_local_files({record});
        REQUIRE(m);
        CHECK_FALSE(m->record);
        REQUIRE(m->refused.size() == 1);
        CHECK_THAT(m->refused[0], Catch::Contains(path.string()));
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("a record's files are hashed only up to a size and a deadline", "[remote]") {
    TempDir tmp;
    std::string content(3 << 20, 'x');
    write_file(tmp / "big.h", content);
    DirectInputs record{key_of("k"), {{tmp / "big.h", sha256_hex(content)}}, {}};
    SECTION("within both") {
        auto m = match_local_files({record});
        REQUIRE(m);
        CHECK(m->record);
    }
    SECTION("a file over the size limit does not match") {
        auto m = match_local_files(
            {record}, LocalCheck{std::chrono::steady_clock::time_point::max(), content.size() - 1});
        REQUIRE(m);
        CHECK_FALSE(m->record);
        REQUIRE(m->refused.size() == 1);
        CHECK_THAT(m->refused[0], Catch::Contains("larger than"));
    }
    SECTION("a passed deadline stops the check, naming the file") {
        auto m = match_local_files({record}, LocalCheck{std::chrono::steady_clock::now()});
        REQUIRE_FALSE(m);
        CHECK_THAT(m.error().message, Catch::Contains("hashing " + (tmp / "big.h").string()));
    }
}

// --------------------------------------------------------------------------- configuration
TEST_CASE("remote configuration: flags, then the environment", "[remote]") {
    CHECK_FALSE(remote_config(std::nullopt, false, env_of({})));
    CHECK_FALSE(remote_config(std::string(""), false, env_of({{"BEKC_REMOTE_CACHE", "http://e"}})));

    auto c =
        remote_config(std::nullopt, false,
                      env_of({{"BEKC_REMOTE_CACHE", "http://env/x"}, {"BEKC_REMOTE_TOKEN", "t"}}));
    REQUIRE(c);
    CHECK(c->url == "http://env/x");
    CHECK(c->token == "t");
    CHECK_FALSE(c->read_only);
    CHECK(c->timeout == std::chrono::seconds(10));
    CHECK(c->problem.empty());

    auto f = remote_config(std::string("https://flag"), true,
                           env_of({{"BEKC_REMOTE_CACHE", "http://env"}}));
    REQUIRE(f);
    CHECK(f->url == "https://flag");
    CHECK(f->read_only);

    for (const char* yes : {"1", "true", "YES"})
        CHECK(remote_config(std::string("http://h"), false,
                            env_of({{"BEKC_REMOTE_CACHE_READONLY", yes}}))
                  ->read_only);
    CHECK_FALSE(
        remote_config(std::string("http://h"), false, env_of({{"BEKC_REMOTE_CACHE_READONLY", "0"}}))
            ->read_only);

    CHECK(remote_config(std::string("http://h"), false, env_of({{"BEKC_REMOTE_TIMEOUT", "3"}}))
              ->timeout == std::chrono::seconds(3));
    for (const char* t : {"0", "x", "3s", "99999"})
        CHECK_FALSE(
            remote_config(std::string("http://h"), false, env_of({{"BEKC_REMOTE_TIMEOUT", t}}))
                ->problem.empty());
    CHECK_FALSE(remote_config(std::string("ftp://h"), false, env_of({}))->problem.empty());
    CHECK_FALSE(remote_config(std::string("-K/etc/passwd"), false, env_of({}))->problem.empty());
    CHECK_FALSE(remote_config(std::string("http://h/a b"), false, env_of({}))->problem.empty());
    CHECK_FALSE(remote_config(std::string("http://h"), false,
                              env_of({{"BEKC_REMOTE_TOKEN", "t\r\nX-Evil: 1"}}))
                    ->problem.empty());
    CHECK(remote_config(std::string("HTTP://h"), false, env_of({}))->problem.empty());
}

TEST_CASE("the entry size limit and the lookup's time limit come from the environment",
          "[remote]") {
    auto config = [](std::map<std::string, std::string> vars) {
        return *remote_config(std::string("http://h"), false, env_of(std::move(vars)));
    };
    CHECK(config({}).max_entry_bytes == kDefaultMaxEntryBytes);
    CHECK(config({{"BEKC_REMOTE_MAX_ENTRY_SIZE", "1MiB"}}).max_entry_bytes == 1 << 20);
    CHECK(config({{"BEKC_REMOTE_MAX_ENTRY_SIZE", "500M"}}).max_entry_bytes == 500'000'000);
    CHECK(config({{"BEKC_REMOTE_MAX_ENTRY_SIZE", ""}}).max_entry_bytes == kDefaultMaxEntryBytes);
    for (const char* bad : {"0", "1000", "lots", "-1", "1X"}) {
        INFO(bad);
        CHECK_THAT(config({{"BEKC_REMOTE_MAX_ENTRY_SIZE", bad}}).problem,
                   Catch::Contains("BEKC_REMOTE_MAX_ENTRY_SIZE"));
    }
    // The record's and the entry's request limits added up.
    CHECK(lookup_budget(config({})) == std::chrono::seconds(40));
    CHECK(lookup_budget(config({{"BEKC_REMOTE_TIMEOUT", "2"}})) == std::chrono::seconds(8));
}

TEST_CASE("display_url hides credentials and trailing slashes", "[remote]") {
    CHECK(display_url("http://user:pw@host:8080/bekc/") == "http://host:8080/bekc");
    CHECK(display_url("https://host/a@b/c") == "https://host/a@b/c");
    CHECK(display_url("http://host") == "http://host");
}

// --------------------------------------------------------------------------- curl
TEST_CASE("curl's arguments: no token, no redirects, the URL last", "[remote]") {
    CurlRequest r{"/usr/bin/curl",
                  false,
                  "http://h/bekc/direct/k.json",
                  "/tmp/out",
                  fs::path("/tmp/auth"),
                  {std::chrono::seconds(2), std::chrono::milliseconds(2500), 1024},
                  "/tmp/out.messages"};
    auto argv = curl_argv(r);
    CHECK(argv[0] == "/usr/bin/curl");
    CHECK(argv[1] == "-q");
    CHECK(argv[argv.size() - 2] == "--url");
    CHECK(argv.back() == r.url);
    auto after = [&](const std::string& option) -> std::string {
        auto it = std::find(argv.begin(), argv.end(), option);
        return it == argv.end() || it + 1 == argv.end() ? "<none>" : *(it + 1);
    };
    auto has = [&](const std::string& a) {
        return std::find(argv.begin(), argv.end(), a) != argv.end();
    };
    CHECK(has("@/tmp/auth"));
    CHECK(has("=http,https"));
    // What the file may hold, less the status line that follows the body.
    CHECK(after("--max-filesize") == std::to_string(1024 - kStatusLineSize));
    // The body to stdout, which bekc copies with its own limit; messages to
    // a file of their own, never into the body.
    CHECK(after("--output") == "-");
    CHECK(after("--stderr") == "/tmp/out.messages");
    CHECK(after("--write-out").find("%{stderr}") == std::string::npos);
    // Limits in fractional seconds, as the lookup's deadline leaves them.
    CHECK(after("--max-time") == "2.500");
    CHECK(after("--connect-timeout") == "2.000");
    CHECK_FALSE(has("--upload-file"));
    CHECK_FALSE(has("-L"));
    CHECK_FALSE(has("--location"));
    // Never 0, which curl reads as "no limit".
    r.limits.total = std::chrono::milliseconds(0);
    argv = curl_argv(r);
    CHECK(after("--max-time") == "0.001");
    CHECK(after("--connect-timeout") == "0.001");
    r.put = true;
    r.header_file.reset();
    argv = curl_argv(r);
    CHECK(after("--upload-file") == "/tmp/out");
    // A PUT's answer to stdout too, bounded the same way, for its error code.
    CHECK(after("--output") == "-");
    CHECK(after("--max-filesize") == std::to_string(1024 - kStatusLineSize));
    CHECK(std::none_of(argv.begin(), argv.end(),
                       [](const std::string& a) { return a.starts_with("@"); }));
}

TEST_CASE("the status line is read off the end of curl's stdout", "[remote]") {
    CHECK(parse_status_line("bekc-http-status:200\n") == 200);
    CHECK(parse_status_line("body bytes bekc-http-status:404\nbekc-http-status:000\n") == 0);
    CHECK(kStatusLineSize == std::string("bekc-http-status:200\n").size());
    CHECK_FALSE(parse_status_line("bekc-http-status:200"));
    CHECK_FALSE(parse_status_line("bekc-http-status:2x0\n"));
    CHECK_FALSE(parse_status_line("short"));
    CHECK_FALSE(parse_status_line(""));
}

TEST_CASE("what a curl run means", "[remote]") {
    CHECK(interpret_curl(exited(0, ""), 200, "").kind == HttpResult::Kind::Ok);
    CHECK(interpret_curl(exited(0, ""), 201, "").kind == HttpResult::Kind::Ok);
    CHECK(interpret_curl(exited(0, ""), 404, "").kind == HttpResult::Kind::NotFound);
    auto denied = interpret_curl(exited(0, ""), 403, "");
    CHECK(denied.kind == HttpResult::Kind::Failed);
    CHECK(denied.status == 403);
    CHECK(denied.message == "HTTP status 403");
    CHECK(interpret_curl(exited(0, ""), std::nullopt, "").kind == HttpResult::Kind::Failed);
    auto refused = interpret_curl(exited(7, ""), 0, "curl: (7) Failed to connect\n");
    CHECK(refused.kind == HttpResult::Kind::Unreachable);
    CHECK(refused.message == "curl: (7) Failed to connect");
    CHECK(interpret_curl(exited(28, ""), 0, "curl: (28) timed out\n").kind ==
          HttpResult::Kind::Unreachable);
    CHECK(interpret_curl(exited(63, ""), 200, "curl: (63) too large\n").kind ==
          HttpResult::Kind::Failed);
    ProcessResult spawn;
    spawn.status = ProcessStatus::SpawnFailed;
    spawn.error = "No such file";
    CHECK(interpret_curl(spawn, std::nullopt, "").kind == HttpResult::Kind::Unreachable);
    ProcessResult slow;
    slow.status = ProcessStatus::TimedOut;
    CHECK(interpret_curl(slow, std::nullopt, "").kind == HttpResult::Kind::Unreachable);
    ProcessResult flood;
    flood.status = ProcessStatus::OutputFailed;
    flood.error = "its output passed the limit of 10 bytes";
    auto f = interpret_curl(flood, std::nullopt, "");
    CHECK(f.kind == HttpResult::Kind::Failed);
    CHECK(f.message == flood.error);
}

// run_process's output_file is what bounds a download (tests/unit/test_process.cpp
// covers the rest of run_process).
TEST_CASE("output streamed to a file stops at its limit and the child is killed", "[remote]") {
    TempDir tmp;
    Command endless;
    endless.argv = {"/bin/cat", "/dev/zero"};
    RunOptions options;
    options.timeout = std::chrono::seconds(60);
    options.output_file = {tmp / "out", 1 << 20};
    auto start = std::chrono::steady_clock::now();
    ProcessResult r = run_process(endless, options);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    CHECK(r.status == ProcessStatus::OutputFailed);
    CHECK_THAT(r.error, Catch::Contains("limit of 1048576 bytes"));
    CHECK(r.output.empty());
    CHECK(r.output_bytes == 1 << 20);
    CHECK(fs::file_size(tmp / "out") == 1 << 20);

    SECTION("without a timeout too") {
        options.timeout.reset();
        options.output_file = {tmp / "out2", 4096};
        ProcessResult q = run_process(endless, options);
        CHECK(q.status == ProcessStatus::OutputFailed);
        CHECK(fs::file_size(tmp / "out2") == 4096);
    }
    SECTION("output within the limit arrives whole") {
        Command some;
        some.argv = {"/usr/bin/printf", "%s", "twelve bytes"};
        options.output_file = {tmp / "small", 12};
        ProcessResult ok = run_process(some, options);
        CHECK(ok.ok());
        CHECK(ok.output_bytes == 12);
        CHECK(test::read_file(tmp / "small") == "twelve bytes");
    }
    SECTION("the file is created fresh, never through a link") {
        write_file(tmp / "target", "keep");
        fs::create_symlink(tmp / "target", tmp / "link");
        options.output_file = {tmp / "link", 100};
        ProcessResult refused = run_process(endless, options);
        CHECK(refused.status == ProcessStatus::SpawnFailed);
        CHECK(test::read_file(tmp / "target") == "keep");
    }
}

TEST_CASE("the remote cache stages its files in the cache's tmp/", "[remote]") {
    TempDir tmp;
    Cache cache(tmp / "cache");
    fs::path dir;
    {
        auto scratch = scratch_dir(cache);
        REQUIRE(scratch);
        dir = scratch->dir();
        CHECK(dir.parent_path() == tmp / "cache" / "tmp");
        CHECK(fs::is_directory(dir));
        write_file(scratch->file("entry.tar"), "x");
        auto moved = std::move(*scratch);
        CHECK(fs::exists(moved.file("entry.tar")));
    }
    CHECK_FALSE(fs::exists(dir));
}

// --------------------------------------------------------------------------- failures
TEST_CASE("an unreachable remote warns once and is then left alone", "[remote]") {
    if (!ToolLookup::system().find("curl")) {
        WARN("no curl on PATH");
        return;
    }
    // A port nobody listens on: bind, read the port, close.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    ::close(fd);
    TempDir tmp;
    Cache cache(tmp / "cache");
    std::vector<std::string> warnings;
    RemoteConfig config;
    config.url = fmt::format("http://127.0.0.1:{}/bekc", ntohs(addr.sin_port));
    ProcessRunner runner;
    RemoteCache remote(
        config, [&](const std::string& w) { warnings.push_back(w); }, runner, ToolLookup::system());
    CHECK_FALSE(remote.fetch(cache, key_of("direct")));
    Entry entry{key_of("k"), tmp / "nowhere", "k", tmp / "nowhere" / "libk.so", 0};
    remote.publish(cache, entry, key_of("direct"), {});
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("is unreachable"));
}

TEST_CASE("an unusable configuration warns and turns the remote off", "[remote]") {
    TempDir tmp;
    Cache cache(tmp / "cache");
    std::vector<std::string> warnings;
    auto config = remote_config(std::string("ftp://h"), false, env_of({}));
    REQUIRE(config);
    ProcessRunner runner;
    RemoteCache remote(
        *config, [&](const std::string& w) { warnings.push_back(w); }, runner,
        ToolLookup::system());
    CHECK_FALSE(remote.fetch(cache, key_of("direct")));
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("remote cache disabled"));
}
