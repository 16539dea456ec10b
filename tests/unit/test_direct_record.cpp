// The direct-mode record file (store/direct_record.hpp): its reader gives
// back exactly what its writer wrote, and takes nothing else for records: a
// damaged, cut or foreign file is a miss, never a crash or another record.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>

#include "../helpers/temp_dir.hpp"
#include "store/direct.hpp"
#include "store/direct_record.hpp"
#include "store/hash.hpp"
#include "store/layout.hpp"

using namespace bekc;
using namespace std::chrono_literals;
using namespace std::string_literals;

namespace {

// Cache keys as the writer records them: 64 lowercase hex digits.
const std::string kKey1 = std::string(63, 'a') + "1";
const std::string kKey2 = std::string(63, 'b') + "2";
const std::string kXxh = "0123456789abcdef0123456789abcdef";

// Two records with paths of every kind of byte but NUL (control characters,
// multi-byte UTF-8, bytes that are not UTF-8), the integers' extremes, and a
// record without any file, absent path or directory.
std::vector<DirectRecord> sample() {
    DirectRecord first{
        kKey1,
        1795754739386076767,
        {{"/inc/a \"quoted\" \\ back\\slash.h", FileStat{12, 1, 2, true}, kXxh},
         {"/inc/ctl\x01\x1f\t\n\r\b\f/x.h", FileStat{0, -5, INT64_MIN, true}, kXxh},
         {"/inc/caf\xc3\xa9/\xf0\x9f\x98\x80/\xe2\x82\xac.h",
          FileStat{UINT64_MAX, INT64_MAX, 0, false}, kXxh},
         // Latin-1: a Linux file name need not be UTF-8.
         {"/inc/caf\xe9/latin1.h", FileStat{1, 1, 1, true}, kXxh},
         {"$BEKC_BASE_DIR/inc/b.h", FileStat{3, 4, 5, true}, kXxh}},
        {"/first/x.h", "/first/sub/y.h", "/\x7f/z.h", "/caf\xe9/\xff.h", "$BEKC_BASE_DIR/c.h"},
        {{"/second",
          DirStamp{UINT64_MAX, 7, INT64_MIN, INT64_MAX},
          {"x.h", "sub/y.h", "..h", ".x/y.h"}},
         {"/caf\xc3\xa9", DirStamp{0, 0, 0, 0}, {"\xe2\x82\xac.h"}}}};
    DirectRecord second{kKey2, 0, {}, {}};
    return {first, second};
}

// `bytes` with its last eight bytes made the check of the rest again
// (store/direct_record.hpp): what a file damaged and then given a matching
// check would hold, so that the reader's checks past the check are reached.
std::string rechecked(std::string bytes) {
    if (bytes.size() < 8) return bytes;
    bytes.resize(bytes.size() - 8);
    uint64_t check = xxh3_64(bytes);
    for (int i = 0; i < 8; ++i) bytes += static_cast<char>(check >> (8 * i));
    return bytes;
}

// Random records of every shape the writer writes: paths of any bytes but
// NUL, absolute or under the base directory, names below their directory,
// any integers.
class RandomRecords {
  public:
    explicit RandomRecords(uint32_t seed) : random_(seed) {}

    std::vector<DirectRecord> records() {
        std::vector<DirectRecord> out(pick(4));
        for (auto& r : out) {
            r.key = hex(64);
            r.written_ns = i64();
            r.files.resize(pick(6));
            for (auto& f : r.files)
                f = {path(), FileStat{u64(), i64(), i64(), pick(2) == 1}, hex(32)};
            r.absent.resize(pick(6));
            for (auto& p : r.absent) p = path();
            r.absent_dirs.resize(pick(3));
            for (auto& d : r.absent_dirs) {
                d = {path(), DirStamp{u64(), u64(), i64(), i64()}, {}};
                d.names.resize(pick(4));
                for (auto& n : d.names) n = name();
            }
        }
        return out;
    }

    size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random_); }

  private:
    uint64_t u64() {
        // The extremes and small numbers as often as any other.
        switch (pick(4)) {
            case 0:
                return 0;
            case 1:
                return UINT64_MAX;
            case 2:
                return pick(1000);
            default:
                return std::uniform_int_distribution<uint64_t>()(random_);
        }
    }
    int64_t i64() { return static_cast<int64_t>(u64()); }
    std::string hex(size_t n) {
        std::string s;
        for (size_t i = 0; i < n; ++i) s += "0123456789abcdef"[pick(16)];
        return s;
    }
    // 1 to 12 bytes, none of them NUL or '/'.
    std::string component() {
        std::string s(1 + pick(12), 'x');
        for (char& c : s) {
            do c = static_cast<char>(1 + pick(255));
            while (c == '/');
        }
        return s;
    }
    std::string path() {
        std::string p = pick(4) == 0 ? std::string(BaseDir::kToken) : "";
        for (size_t n = 1 + pick(4); n > 0; --n) p += "/" + component();
        return p;
    }
    std::string name() {
        std::string n;
        do {
            n = component();
            for (size_t more = pick(3); more > 0; --more) n += "/" + component();
        } while (!is_name_below(n));  // "." and ".." are components too
        return n;
    }

    std::mt19937 random_;
};

}  // namespace

TEST_CASE("the record reader gives back what the writer wrote", "[direct]") {
    const std::vector<DirectRecord> records = sample();
    const std::string bytes = encode_direct_records(records);
    auto back = decode_direct_records(bytes);
    REQUIRE(back.has_value());
    CHECK(*back == records);
    CHECK((*back)[0].files[1].path == "/inc/ctl\x01\x1f\t\n\r\b\f/x.h");
    CHECK((*back)[0].files[2].stat == FileStat{UINT64_MAX, INT64_MAX, 0, false});
    CHECK((*back)[0].absent_dirs[0].stamp == DirStamp{UINT64_MAX, 7, INT64_MIN, INT64_MAX});
    CHECK((*back)[1].absent_dirs.empty());
    CHECK(decode_direct_records(encode_direct_records({})) == std::vector<DirectRecord>{});
}

TEST_CASE("property: random records read back as they were written", "[direct][property]") {
    // For records of any shape the writer writes, reading the bytes gives
    // the same records, and writing those gives the same bytes.
    RandomRecords random(20261129);
    for (int round = 0; round < 2000; ++round) {
        const std::vector<DirectRecord> records = random.records();
        const std::string bytes = encode_direct_records(records);
        auto back = decode_direct_records(bytes);
        REQUIRE(back.has_value());
        REQUIRE(*back == records);
        REQUIRE(encode_direct_records(*back) == bytes);
    }
}

TEST_CASE("property: a cut or changed record file reads as no records", "[direct][property]") {
    // Every cut of a record file (a torn or truncated copy), every byte of it
    // changed, and bytes added after it: none is a record file.
    RandomRecords random(7);
    for (int round = 0; round < 20; ++round) {
        const std::string bytes = encode_direct_records(random.records());
        for (size_t n = 0; n < bytes.size(); ++n) {
            INFO("first " << n << " bytes of round " << round);
            CHECK_FALSE(decode_direct_records(bytes.substr(0, n)).has_value());
        }
        for (size_t at = 0; at < bytes.size(); ++at) {
            std::string changed = bytes;
            changed[at] = static_cast<char>(changed[at] ^ (1 + random.pick(255)));
            INFO("byte " << at << " of round " << round);
            CHECK_FALSE(decode_direct_records(changed).has_value());
        }
        CHECK_FALSE(decode_direct_records(bytes + '\0').has_value());
        CHECK_FALSE(decode_direct_records(rechecked(bytes + "\0\0\0\0\0\0\0\0"s)).has_value());
    }
}

TEST_CASE("property: bytes the reader takes are what the writer writes for what it read",
          "[direct][property]") {
    // Damaged record files given a matching check again: the reader takes
    // one only when its records are of the writer's kinds and writing them
    // gives the same bytes back, so no two files read as the same records.
    RandomRecords random(99);
    const std::string likely = "\x00\x01\x02\x20\x7f\x80\xff/.$0a"s;
    size_t taken = 0;
    for (int round = 0; round < 5000; ++round) {
        std::string bytes = encode_direct_records(random.records());
        for (size_t n = 1 + random.pick(3); n > 0; --n) {
            size_t at = 8 + random.pick(bytes.size() - 16);  // past the magic, before the check
            char c = static_cast<char>(random.pick(2) ? likely[random.pick(likely.size())]
                                                      : random.pick(256));
            if (random.pick(2))
                bytes[at] = c;
            else
                bytes.insert(at, 1, c);
        }
        bytes = rechecked(bytes);
        auto records = decode_direct_records(bytes);
        if (!records) continue;
        ++taken;
        INFO("round " << round);
        for (const DirectRecord& record : *records) {
            CHECK(is_valid_key(record.key));
            for (const auto& f : record.files) CHECK(is_hex(f.xxh128, 32));
            for (const auto& d : record.absent_dirs)
                for (const auto& name : d.names) CHECK(is_name_below(name));
        }
        CHECK(encode_direct_records(*records) == bytes);
    }
    CHECK(taken > 0);  // some damage leaves records of the writer's kinds
}

TEST_CASE("a record file of another format is no record file", "[direct]") {
    const std::string bytes = encode_direct_records(sample());
    REQUIRE(bytes.starts_with("bekc-rec"));
    // The JSON of formats 1 and 2, which bekc wrote before.
    CHECK_FALSE(decode_direct_records(R"({"format": 2, "records": []})").has_value());
    CHECK_FALSE(decode_direct_records("").has_value());
    // Another magic, or a later format, even with a check that matches.
    std::string other = bytes;
    other[0] = 'B';
    CHECK_FALSE(decode_direct_records(rechecked(other)).has_value());
    std::string later = bytes;
    later[8] = 4;
    CHECK_FALSE(decode_direct_records(rechecked(later)).has_value());
    CHECK(decode_direct_records(rechecked(bytes)).has_value());
}

TEST_CASE("a record the store cannot use makes the whole file a broken one", "[direct]") {
    // The key names an entry directory and the paths are checked where they
    // are: a key that is not a cache key, a hash that is not an XXH3-128, a
    // path that is neither absolute nor under the base directory, one that
    // holds a NUL (which no file name does), or a name that is not below its
    // directory is damage, as a cut file is. The writer writes what it is
    // given; the reader refuses it.
    using Damage = std::function<void(std::vector<DirectRecord>&)>;
    auto first = [](std::vector<DirectRecord>& r) -> DirectRecord& { return r[0]; };
    const std::vector<std::pair<std::string, Damage>> damages = {
        {"a key with a character that is not a hex digit",
         [&](auto& r) { first(r).key[10] = 'g'; }},
        {"a key in capitals", [&](auto& r) { first(r).key = std::string(64, 'A'); }},
        {"a key one digit short", [&](auto& r) { first(r).key = kKey1.substr(1); }},
        {"an empty key", [&](auto& r) { first(r).key = ""; }},
        {"the second record's key", [](auto& r) { r[1].key = "k2"; }},
        {"a hash that is not 32 hex digits",
         [&](auto& r) { first(r).files[0].xxh128 = kXxh.substr(1) + "g"; }},
        {"a relative file", [&](auto& r) { first(r).files[0].path = "inc/a.h"; }},
        {"an empty file path", [&](auto& r) { first(r).files[0].path = ""; }},
        {"a file path with a NUL",
         [&](auto& r) { first(r).files[0].path = std::string("/inc/a\0.h", 9); }},
        {"a relative absent path", [&](auto& r) { first(r).absent[0] = "first/x.h"; }},
        {"an absent path with a NUL",
         [&](auto& r) { first(r).absent[0] = std::string("/first\0/x.h", 11); }},
        {"a relative directory", [&](auto& r) { first(r).absent_dirs[0].dir = "second"; }},
    };
    REQUIRE(decode_direct_records(encode_direct_records(sample())).has_value());
    for (const auto& [what, damage] : damages) {
        INFO(what);
        auto records = sample();
        damage(records);
        CHECK_FALSE(decode_direct_records(encode_direct_records(records)).has_value());
    }
    for (std::string name : {""s, "/x.h"s, "a//x.h"s, "x.h/"s, "."s, ".."s, "./x.h"s, "a/../x.h"s,
                             "a/.."s, std::string("x\0.h", 4)}) {
        INFO(name);
        auto records = sample();
        records[0].absent_dirs[0].names.push_back(name);
        CHECK_FALSE(decode_direct_records(encode_direct_records(records)).has_value());
    }
}

namespace {

// A record file of one record for `key` over one header, in `cache`.
struct RecordedHeader {
    test::TempDir tmp;
    CacheDir cache{tmp / "cache"};
    fs::path file = "direct/ab/record.rec";
    fs::path header = tmp / "inc" / "a.h";

    RecordedHeader() {
        test::write_file(header, "#define A 1\n");
        fs::create_directories(tmp / "cache" / "direct" / "ab");
        DirectInputs in{kKey1, {{header, ""}}, {tmp / "first" / "a.h"}};
        REQUIRE(add_direct_record(cache, file, in).has_value());
    }
    std::string bytes() const { return test::read_file(cache.path(file)); }
    void write(const std::string& bytes) const { test::write_file(cache.path(file), bytes); }
};

}  // namespace

TEST_CASE("a record with a damaged key is a miss and no valid record file", "[direct]") {
    RecordedHeader r;
    REQUIRE(check_direct_file(r.cache, r.file, 0s).key == kKey1);
    const std::string good = r.bytes();
    for (bool with_check : {false, true}) {
        std::string bytes = good;
        size_t at = bytes.find(kKey1);
        REQUIRE(at != std::string::npos);
        bytes[at + 10] = 'x';
        r.write(with_check ? rechecked(bytes) : bytes);
        DirectLookup found = check_direct_file(r.cache, r.file, 0s);
        CHECK_FALSE(found.key.has_value());
        CHECK(found.why_not == "no direct-mode record");
        CHECK_FALSE(direct_file_is_valid(r.cache, r.file));
    }
}

TEST_CASE("fuzz: a damaged record file gives a valid record or a miss", "[direct][fuzz]") {
    // Random damage to a record file that holds, half of the time with the
    // check made to match again, so that the reader's every other check is
    // reached: every lookup of it answers a cache key or misses, every record
    // read from it has a cache key (CacheLayout takes it) and paths of the
    // writer's kinds, and nothing crashes (the suite also runs under ASan and
    // UBSan).
    RecordedHeader r;
    const std::string good = r.bytes();
    std::mt19937 random(20240611);
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
    // Bytes that make lengths, counts and flags small, large or just wrong.
    const std::string likely = "\x00\x01\x02\x08\x20\x7f\x80\xff/.$0a"s;
    size_t hits = 0, misses = 0;
    for (int round = 0; round < 2000; ++round) {
        std::string bytes = good;
        for (size_t n = 1 + pick(3); n > 0; --n) {
            size_t at = pick(bytes.size());
            char c = static_cast<char>(pick(2) ? likely[pick(likely.size())] : pick(256));
            switch (pick(4)) {
                case 0:
                    bytes[at] = c;
                    break;
                case 1:
                    bytes.insert(at, 1, c);
                    break;
                case 2:
                    bytes.erase(at, 1 + pick(4));
                    break;
                default:  // within the key, where one character is the usual damage
                    bytes[bytes.find(kKey1) == std::string::npos ? at
                                                                 : bytes.find(kKey1) + pick(64)] =
                        c;
            }
        }
        if (pick(2)) bytes = rechecked(bytes);
        INFO("round " << round);
        const std::vector<DirectRecord> records =
            decode_direct_records(bytes).value_or(std::vector<DirectRecord>{});
        for (const DirectRecord& record : records) {
            CHECK(is_valid_key(record.key));
            CHECK_NOTHROW(CacheLayout::entry(record.key));
            for (const auto& f : record.files) CHECK((!f.path.empty() && f.path[0] == '/'));
        }
        r.write(bytes);
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
