// The direct-mode record file's reader (store/direct_record.hpp): it reads
// what the writer (util/json_text.hpp's dump_json) produces, exactly, and takes nothing else
// for a record; a damaged record file is a miss.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "../helpers/temp_dir.hpp"
#include "store/direct.hpp"
#include "store/direct_record.hpp"
#include "store/layout.hpp"
#include "util/json_text.hpp"

using namespace bekc;
using namespace std::chrono_literals;
using namespace std::string_literals;
using nlohmann::json;

namespace {

// Cache keys as the writer records them: 64 lowercase hex digits.
const std::string kKey1 = std::string(63, 'a') + "1";
const std::string kKey2 = std::string(63, 'b') + "2";
const std::string kXxh = "0123456789abcdef0123456789abcdef";

// `text` with @KEY@, @KEY2@ and @XXH@ replaced by kKey1, kKey2 and kXxh.
std::string filled(std::string text) {
    for (const auto& [mark, value] :
         {std::pair<std::string, std::string>{"@KEY@", kKey1}, {"@KEY2@", kKey2}, {"@XXH@", kXxh}})
        for (size_t at; (at = text.find(mark)) != std::string::npos;)
            text.replace(at, mark.size(), value);
    return text;
}

// The records as nlohmann's document reads them, member by member: what the
// reader must give back for every file the writer writes.
std::vector<DirectRecord> reference(const json& j) {
    std::vector<DirectRecord> out;
    for (const auto& r : j.at("records")) {
        DirectRecord record{r.at("key").get<std::string>(),
                            r.at("written_ns").get<int64_t>(),
                            {},
                            r.at("absent").get<std::vector<std::string>>()};
        for (const auto& f : r.at("files"))
            record.files.push_back(
                {f.at("path").get<std::string>(),
                 FileStat{f.at("size").get<uint64_t>(), f.at("mtime_ns").get<int64_t>(),
                          f.at("ctime_ns").get<int64_t>(), true},
                 f.at("xxh128").get<std::string>()});
        for (const auto& d : r.value("absent_dirs", json::array()))
            record.absent_dirs.push_back(
                {d.at("path").get<std::string>(),
                 DirStamp{d.at("dev").get<uint64_t>(), d.at("ino").get<uint64_t>(),
                          d.at("mtime_ns").get<int64_t>(), d.at("ctime_ns").get<int64_t>()},
                 d.at("names").get<std::vector<std::string>>()});
        out.push_back(std::move(record));
    }
    return out;
}

bool same(const std::vector<DirectRecord>& a, const std::vector<DirectRecord>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].key != b[i].key || a[i].written_ns != b[i].written_ns ||
            a[i].absent != b[i].absent || a[i].files.size() != b[i].files.size())
            return false;
        for (size_t k = 0; k < a[i].files.size(); ++k) {
            const auto &x = a[i].files[k], &y = b[i].files[k];
            if (x.path != y.path || x.stat != y.stat || x.xxh128 != y.xxh128) return false;
        }
        if (a[i].absent_dirs.size() != b[i].absent_dirs.size()) return false;
        for (size_t k = 0; k < a[i].absent_dirs.size(); ++k) {
            const auto &x = a[i].absent_dirs[k], &y = b[i].absent_dirs[k];
            if (x.dir != y.dir || x.stamp != y.stamp || x.names != y.names) return false;
        }
    }
    return true;
}

json file_json(std::string path, uint64_t size, int64_t mtime, int64_t ctime) {
    return {{"path", std::move(path)},
            {"size", size},
            {"mtime_ns", mtime},
            {"ctime_ns", ctime},
            {"xxh128", kXxh}};
}

// Two records with paths that need every kind of escape, multi-byte UTF-8
// and bytes that are not UTF-8, and the integers' extremes.
json sample() {
    json first = {
        {"key", kKey1},
        {"written_ns", 1795754739386076767},
        {"files",
         {file_json("/inc/a \"quoted\" \\ back\\slash.h", 12, 1, 2),
          file_json("/inc/ctl\x01\x1f\t\n\r\b\f/x.h", 0, -5, INT64_MIN),
          file_json("/inc/caf\xc3\xa9/\xf0\x9f\x98\x80/\xe2\x82\xac.h", UINT64_MAX, INT64_MAX, 0),
          // Latin-1: a Linux file name need not be UTF-8.
          file_json("/inc/caf\xe9/latin1.h", 1, 1, 1)}},
        {"absent", {"/first/x.h", "/first/sub/y.h", "/\x7f/z.h", "/caf\xe9/\xff.h"}},
        {"absent_dirs",
         {{{"path", "/second"},
           {"dev", UINT64_MAX},
           {"ino", 7},
           {"mtime_ns", INT64_MIN},
           {"ctime_ns", INT64_MAX},
           {"names", {"x.h", "sub/y.h", "..h", ".x/y.h"}}},
          {{"path", "/caf\xc3\xa9"},
           {"dev", 0},
           {"ino", 0},
           {"mtime_ns", 0},
           {"ctime_ns", 0},
           {"names", {"\xe2\x82\xac.h"}}}}}};
    // As a record written before directories were stamped: no "absent_dirs".
    json second = {
        {"key", kKey2}, {"written_ns", 0}, {"files", json::array()}, {"absent", json::array()}};
    return {{"format", 2}, {"records", {first, second}}};
}

}  // namespace

TEST_CASE("the record reader gives back what the writer wrote", "[direct]") {
    json j = sample();
    std::vector<DirectRecord> want = reference(j);
    REQUIRE(want.size() == 2);
    CHECK(same(parse_direct_records(dump_json(j)), want));
    // Indented, with its line breaks and spaces.
    CHECK(same(parse_direct_records(dump_json(j, 2)), want));
    CHECK(parse_direct_records(dump_json(j))[0].files[1].path == "/inc/ctl\x01\x1f\t\n\r\b\f/x.h");
    CHECK(parse_direct_records(dump_json(j))[0].files[2].stat.size == UINT64_MAX);
    CHECK(parse_direct_records(dump_json(j))[0].files[1].stat.ctime_ns == INT64_MIN);
    CHECK(parse_direct_records(dump_json(j))[0].absent_dirs[0].stamp ==
          DirStamp{UINT64_MAX, 7, INT64_MIN, INT64_MAX});
    CHECK(parse_direct_records(dump_json(j))[1].absent_dirs.empty());
}

TEST_CASE("record files of format 1, before directories were stamped, still read", "[direct]") {
    json j = sample();
    j["format"] = 1;
    j["records"][0].erase("absent_dirs");
    auto records = parse_direct_records(dump_json(j));
    REQUIRE(records.size() == 2);
    CHECK(records[0].absent ==
          std::vector<std::string>{"/first/x.h", "/first/sub/y.h", "/\x7f/z.h", "/caf\xe9/\xff.h"});
    CHECK(records[0].absent_dirs.empty());
    // A later format is another bekc's: none of it is taken.
    j["format"] = 3;
    CHECK(parse_direct_records(dump_json(j)).empty());
}

TEST_CASE("the record reader reads any JSON spelling of the same records", "[direct]") {
    // Escapes the writer does not use (a byte's in capitals), members in
    // another order and members it does not know (of any type), skipped; of
    // two equal keys the last.
    std::string text = filled(R"( { "extra": {"a": [1, -2.5e+3, true, false, null, {"b": "\""}]},
        "records": [ { "absent": ["\/x\u00e9\ud83d\ude00.h", "/caf\udcE9.h"], "note": 0.5,
          "files": [ {"xxh128": "@XXH@", "ctime_ns": 3, "mtime_ns": -0, "size": 0,
                      "path": "/a\u0001b", "more": [[]]} ],
          "written_ns": 7, "key": "@KEY2@", "key": "@KEY@" } ],
        "format": 1 } )");
    auto records = parse_direct_records(text);
    REQUIRE(records.size() == 1);
    CHECK(records[0].key == kKey1);
    CHECK(records[0].written_ns == 7);
    CHECK(records[0].absent ==
          std::vector<std::string>{"/x\xc3\xa9\xf0\x9f\x98\x80.h", "/caf\xe9.h"});
    REQUIRE(records[0].files.size() == 1);
    CHECK(records[0].files[0].path ==
          "/a\x01"
          "b");
    CHECK(records[0].files[0].stat == FileStat{0, 0, 3, true});
    CHECK(same(records, reference(parse_json(text).value())));
}

TEST_CASE("the record reader takes nothing else for records", "[direct]") {
    std::string good = dump_json(sample());
    REQUIRE_FALSE(parse_direct_records(good).empty());
    // Every cut of a record file (a torn or truncated write) reads as none.
    for (size_t n = 0; n < good.size(); ++n) {
        INFO("first " << n << " bytes");
        CHECK(parse_direct_records(good.substr(0, n)).empty());
    }
    auto records_with = [](const std::string& file_members) {
        return filled(R"({"format": 1, "records": [{"key": "@KEY@", "written_ns": 1, "absent": [],
                   "files": [{)" +
                      file_members + "}]}]}");
    };
    const std::string members =
        R"("path": "/a.h", "xxh128": "@XXH@", "mtime_ns": 1, "ctime_ns": 2, "size": )";
    REQUIRE(parse_direct_records(records_with(members + "3")).size() == 1);
    for (std::string bad : {
             // numbers that are not the integers the writer writes
             members + "3.0",
             members + "3e0",
             members + "-3",
             members + "03",
             members + "+3",
             members + "18446744073709551616",
             members + "\"3\"",
             members + "null",
             // a member missing
             std::string(R"("path": "/a.h", "xxh128": "@XXH@", "mtime_ns": 1, "size": 3)"),
             // strings that are not JSON, or not UTF-8
             std::string(R"("path": "/a)") + "\x01" + R"(", "xxh128": "@XXH@", "mtime_ns": 1,
                 "ctime_ns": 2, "size": 3)",
             std::string(R"("path": "/a)") + "\xc3" + R"(", "xxh128": "@XXH@", "mtime_ns": 1,
                 "ctime_ns": 2, "size": 3)",
             std::string(R"("path": "/a)") + "\xed\xa0\x80" +
                 R"(", "xxh128": "@XXH@", "mtime_ns": 1,
                 "ctime_ns": 2, "size": 3)",
             std::string(R"("path": "/a\ud800", "xxh128": "@XXH@", "mtime_ns": 1, "ctime_ns": 2,
                 "size": 3)"),
             // a lone low surrogate that stands for no byte (util/json_text.hpp)
             std::string(R"("path": "/a\udc41", "xxh128": "@XXH@", "mtime_ns": 1, "ctime_ns": 2,
                 "size": 3)"),
             std::string(R"("path": "/a\q", "xxh128": "@XXH@", "mtime_ns": 1, "ctime_ns": 2,
                 "size": 3)"),
         }) {
        INFO(bad);
        CHECK(parse_direct_records(records_with(bad)).empty());
    }
    for (const char* other : {
             R"({"format": 3, "records": []})",
             R"({"records": []})",
             R"({"format": 1})",
             R"({"format": 1, "records": {}})",
             R"({"format": 1, "records": [{"key": "@KEY@", "written_ns": 1, "files": []}]})",
             // a directory's group missing a member, with a negative device, or
             // with a name that is not a path below it
             R"({"format": 1, "records": [{"key": "@KEY@", "written_ns": 1, "files": [],
                 "absent": [], "absent_dirs": [{"path": "/d", "dev": 1, "mtime_ns": 1,
                 "ctime_ns": 1, "names": ["x.h"]}]}]})",
             R"({"format": 1, "records": [{"key": "@KEY@", "written_ns": 1, "files": [],
                 "absent": [], "absent_dirs": [{"path": "/d", "dev": 1, "ino": 1,
                 "mtime_ns": 1, "ctime_ns": 1}]}]})",
             R"({"format": 1, "records": [{"key": "@KEY@", "written_ns": 1, "files": [],
                 "absent": [], "absent_dirs": [{"path": "/d", "dev": -1, "ino": 1,
                 "mtime_ns": 1, "ctime_ns": 1, "names": ["x.h"]}]}]})",
             R"({"format": 1, "records": []} x)",
             R"([{"format": 1, "records": []}])",
             R"({"format": 1, "records": [],})",
         }) {
        INFO(other);
        CHECK(parse_direct_records(filled(other)).empty());
    }
    for (const char* name :
         {"", "/x.h", "a//x.h", "x.h/", ".", "..", "./x.h", "a/../x.h", "a/.."}) {
        INFO(name);
        json j = sample();
        j["records"][0]["absent_dirs"][0]["names"].push_back(name);
        CHECK(parse_direct_records(dump_json(j)).empty());
    }
    // Nesting deeper than a record file's, in a member the reader skips.
    CHECK(
        parse_direct_records(R"({"x": )" + std::string(100000, '[') + ", \"format\": 1}").empty());
}

TEST_CASE("a record the store cannot use makes the whole file a broken one", "[direct]") {
    // The key names an entry directory and the paths are checked where they
    // are: a key that is not a cache key, a hash that is not an XXH3-128, a
    // path that is neither absolute nor under the base directory, or one that
    // holds a NUL (which no file name does) is damage, as a cut file is.
    using Damage = std::function<void(json&)>;
    auto first = [](json& j) -> json& { return j["records"][0]; };
    const std::vector<std::pair<const char*, Damage>> damages = {
        {"a key with a character that is not a hex digit",
         [&](json& j) { first(j)["key"] = kKey1.substr(0, 10) + "g" + kKey1.substr(11); }},
        {"a key in capitals", [&](json& j) { first(j)["key"] = std::string(64, 'A'); }},
        {"a key one digit short", [&](json& j) { first(j)["key"] = kKey1.substr(1); }},
        {"an empty key", [&](json& j) { first(j)["key"] = ""; }},
        {"the second record's key", [](json& j) { j["records"][1]["key"] = "k2"; }},
        {"a hash that is not 32 hex digits",
         [&](json& j) { first(j)["files"][0]["xxh128"] = kXxh.substr(1) + "g"; }},
        {"a relative file", [&](json& j) { first(j)["files"][0]["path"] = "inc/a.h"; }},
        {"an empty file path", [&](json& j) { first(j)["files"][0]["path"] = ""; }},
        {"a file path with a NUL",
         [&](json& j) { first(j)["files"][0]["path"] = std::string("/inc/a\0.h", 9); }},
        {"a relative absent path", [&](json& j) { first(j)["absent"][0] = "first/x.h"; }},
        {"an absent path with a NUL",
         [&](json& j) { first(j)["absent"][0] = std::string("/first\0/x.h", 11); }},
        {"a relative directory", [&](json& j) { first(j)["absent_dirs"][0]["path"] = "second"; }},
        {"a name with a NUL",
         [&](json& j) { first(j)["absent_dirs"][0]["names"][0] = std::string("x\0.h", 4); }},
    };
    REQUIRE(parse_direct_records(dump_json(sample())).size() == 2);
    for (const auto& [what, damage] : damages) {
        INFO(what);
        json j = sample();
        damage(j);
        CHECK(parse_direct_records(dump_json(j)).empty());
    }
    // What the writer records under a base directory is a path.
    json j = sample();
    first(j)["files"][0]["path"] = "$BEKC_BASE_DIR/inc/a.h";
    first(j)["absent"][0] = "$BEKC_BASE_DIR/first/x.h";
    first(j)["absent_dirs"][0]["path"] = "$BEKC_BASE_DIR";
    CHECK(parse_direct_records(dump_json(j)).size() == 2);
}

namespace {

// A record file of one record for `key` over one header, in `cache`.
struct RecordedHeader {
    test::TempDir tmp;
    CacheDir cache{tmp / "cache"};
    fs::path file = "direct/ab/record.json";
    fs::path header = tmp / "inc" / "a.h";

    RecordedHeader() {
        test::write_file(header, "#define A 1\n");
        fs::create_directories(tmp / "cache" / "direct" / "ab");
        DirectInputs in{kKey1, {{header, ""}}, {tmp / "first" / "a.h"}};
        REQUIRE(add_direct_record(cache, file, in).has_value());
    }
    std::string text() const { return test::read_file(cache.path(file)); }
    void write(const std::string& text) const { test::write_file(cache.path(file), text); }
};

}  // namespace

TEST_CASE("a record with a damaged key is a miss and no valid record file", "[direct]") {
    RecordedHeader r;
    REQUIRE(check_direct_file(r.cache, r.file, 0s).key == kKey1);
    std::string text = r.text();
    size_t at = text.find(kKey1);
    REQUIRE(at != std::string::npos);
    text[at + 10] = 'x';
    r.write(text);
    DirectLookup found = check_direct_file(r.cache, r.file, 0s);
    CHECK_FALSE(found.key.has_value());
    CHECK(found.why_not == "no direct-mode record");
    CHECK_FALSE(direct_file_is_valid(r.cache, r.file));
}

TEST_CASE("fuzz: a damaged record file gives a valid record or a miss", "[direct][fuzz]") {
    // Random damage to a record file that holds: every lookup of it answers
    // a cache key or misses, every record read from it has a cache key
    // (CacheLayout takes it) and paths of the writer's kinds, and nothing
    // crashes (the suite also runs under ASan and UBSan).
    RecordedHeader r;
    const std::string good = r.text();
    std::mt19937 random(20240611);
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
    auto any_byte = [&] { return static_cast<char>(pick(256)); };
    const std::string likely = "0123456789abcdefgABF\"\\/:,{}[] -.e\x00\xc3\xe9\x80"s;
    size_t hits = 0, misses = 0;
    for (int round = 0; round < 1000; ++round) {
        std::string text = good;
        for (size_t n = 1 + pick(3); n > 0; --n) {
            size_t at = pick(text.size());
            char c = pick(2) ? likely[pick(likely.size())] : any_byte();
            switch (pick(4)) {
                case 0:
                    text[at] = c;
                    break;
                case 1:
                    text.insert(at, 1, c);
                    break;
                case 2:
                    text.erase(at, 1 + pick(4));
                    break;
                default:  // within the key, where one character is the usual damage
                    text[text.find(kKey1) == std::string::npos ? at : text.find(kKey1) + pick(64)] =
                        c;
            }
        }
        INFO(text);
        const std::vector<DirectRecord> records = parse_direct_records(text);
        for (const DirectRecord& record : records) {
            CHECK(is_valid_key(record.key));
            CHECK_NOTHROW(CacheLayout::entry(record.key));
            for (const auto& f : record.files) CHECK((!f.path.empty() && f.path[0] == '/'));
        }
        r.write(text);
        DirectLookup found = check_direct_file(r.cache, r.file, 0s);
        if (found.key) {
            ++hits;
            CHECK(is_valid_key(*found.key));
            CHECK_NOTHROW(CacheLayout::entry(*found.key));
            CHECK(std::any_of(records.begin(), records.end(), [&](const DirectRecord& record) {
                return record.key == *found.key;
            }));
        } else {
            ++misses;
            CHECK_FALSE(found.why_not.empty());
        }
    }
    // Both outcomes were exercised.
    CHECK(hits > 0);
    CHECK(misses > 0);
}
