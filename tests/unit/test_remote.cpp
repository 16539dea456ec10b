// The remote cache's parts that need no server: the entry archive, the remote
// direct records, the configuration, and how curl is called and understood.
// tests/integration/test_remote_cache.py runs the whole against nginx.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "../helpers/temp_dir.hpp"
#include "plan/toolchain.hpp"
#include "remote/entry_archive.hpp"
#include "remote/http.hpp"
#include "remote/remote_cache.hpp"
#include "remote/remote_record.hpp"
#include "store/hash.hpp"
#include "store/key.hpp"

using namespace bekc;
using test::TempDir;
using test::write_file;

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

std::expected<std::vector<std::string>, std::string> unpack(const TempDir& tmp,
                                                            const std::string& bytes) {
    write_file(tmp / "in.tar", bytes);
    fs::create_directories(tmp / "out");
    return read_entry_archive(tmp / "in.tar", tmp / "out");
}

std::string key_of(const std::string& seed) {
    return KeyBuilder("test").add("seed", seed).digest();
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars](std::string_view name) -> std::optional<std::string> {
        auto it = vars.find(std::string(name));
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
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
        CHECK_THAT(r.error(), Catch::Contains(why));
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
    auto text = render_remote_records({a, b});
    REQUIRE(text);
    auto back = parse_remote_records(*text);
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

TEST_CASE("a remote record is used only when this machine's files match it", "[remote]") {
    TempDir tmp;
    fs::path h = tmp / "a.h", shadow = tmp / "first" / "a.h";
    write_file(h, "one");
    DirectInputs old_header{key_of("old"), {{h, sha256_hex("zero")}}, {}};
    DirectInputs current{key_of("cur"), {{h, sha256_hex("one")}}, {shadow}};
    auto m = match_local_files({old_header, current});
    REQUIRE(m);
    CHECK(m->key == current.key);

    SECTION("a shadowing file that now exists") {
        write_file(shadow, "");
        CHECK_FALSE(match_local_files({current}));
    }
    SECTION("a dangling symlink shadows too") {
        fs::create_directories(shadow.parent_path());
        fs::create_symlink(tmp / "nowhere", shadow);
        CHECK_FALSE(match_local_files({current}));
    }
    SECTION("a missing dependency") {
        fs::remove(h);
        CHECK_FALSE(match_local_files({current}));
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
                  {std::chrono::seconds(2), std::chrono::seconds(10), 1024}};
    auto argv = curl_argv(r);
    CHECK(argv[0] == "/usr/bin/curl");
    CHECK(argv[1] == "-q");
    CHECK(argv[argv.size() - 2] == "--url");
    CHECK(argv.back() == r.url);
    auto has = [&](const std::string& a) {
        return std::find(argv.begin(), argv.end(), a) != argv.end();
    };
    CHECK(has("@/tmp/auth"));
    CHECK(has("=http,https"));
    CHECK(has("--max-filesize"));
    CHECK_FALSE(has("--upload-file"));
    CHECK_FALSE(has("-L"));
    CHECK_FALSE(has("--location"));
    r.put = true;
    r.header_file.reset();
    argv = curl_argv(r);
    CHECK(std::find(argv.begin(), argv.end(), "--upload-file") != argv.end());
    CHECK(std::none_of(argv.begin(), argv.end(),
                       [](const std::string& a) { return a.starts_with("@"); }));
}

TEST_CASE("what a curl run means", "[remote]") {
    CHECK(interpret_curl(exited(0, "bekc-http-status:200\n")).kind == HttpResult::Kind::Ok);
    CHECK(interpret_curl(exited(0, "bekc-http-status:201\n")).kind == HttpResult::Kind::Ok);
    CHECK(interpret_curl(exited(0, "bekc-http-status:404\n")).kind == HttpResult::Kind::NotFound);
    auto denied = interpret_curl(exited(0, "bekc-http-status:403\n"));
    CHECK(denied.kind == HttpResult::Kind::Failed);
    CHECK(denied.status == 403);
    CHECK(denied.message == "HTTP status 403");
    auto refused = interpret_curl(exited(7, "curl: (7) Failed to connect\nbekc-http-status:000\n"));
    CHECK(refused.kind == HttpResult::Kind::Unreachable);
    CHECK(refused.message == "curl: (7) Failed to connect");
    CHECK(interpret_curl(exited(28, "curl: (28) timed out\n")).kind ==
          HttpResult::Kind::Unreachable);
    CHECK(interpret_curl(exited(63, "curl: (63) too large\n")).kind == HttpResult::Kind::Failed);
    ProcessResult spawn;
    spawn.status = ProcessStatus::SpawnFailed;
    spawn.error = "No such file";
    CHECK(interpret_curl(spawn).kind == HttpResult::Kind::Unreachable);
    ProcessResult slow;
    slow.status = ProcessStatus::TimedOut;
    CHECK(interpret_curl(slow).kind == HttpResult::Kind::Unreachable);
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
    RemoteCache remote(config, [&](const std::string& w) { warnings.push_back(w); });
    CHECK_FALSE(remote.fetch(cache, key_of("direct")));
    Entry entry{key_of("k"), tmp / "nowhere", "k", tmp / "nowhere" / "libk.so", 0};
    remote.publish(entry, key_of("direct"), {});
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("is unreachable"));
}

TEST_CASE("an unusable configuration warns and turns the remote off", "[remote]") {
    TempDir tmp;
    Cache cache(tmp / "cache");
    std::vector<std::string> warnings;
    auto config = remote_config(std::string("ftp://h"), false, env_of({}));
    REQUIRE(config);
    RemoteCache remote(*config, [&](const std::string& w) { warnings.push_back(w); });
    CHECK_FALSE(remote.fetch(cache, key_of("direct")));
    REQUIRE(warnings.size() == 1);
    CHECK_THAT(warnings[0], Catch::Contains("remote cache disabled"));
}
