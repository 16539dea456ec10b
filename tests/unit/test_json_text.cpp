// JSON text of any bytes (util/json_text.hpp): what dump_json writes,
// parse_json reads back byte for byte, and Python reads as os.fsdecode does.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/json_text.hpp"
#include "util/text.hpp"

using namespace bekc;
using namespace std::string_literals;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// Strings whose bytes JSON cannot hold as they are, beside ones it can.
const std::vector<std::string> kAwkward = {
    "/tmp/caf\xe9/k.cpp",                         // Latin-1
    "\xff\xfe\x80\x81",                           // no UTF-8 at all
    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",  // UTF-8
    "\xc3",                                       // a sequence cut short
    "\xed\xa0\x80",                               // a surrogate in UTF-8
    "\xc0\xaf",                                   // an overlong '/'
    "a\0b"s,                                      // NUL
    "\0\0\xe9\0"s,                                // NUL beside a byte
    "\xc2\x80\0\xc3\xa9"s,                        // what a mark looks like, in UTF-8
    "\\u0000 \\udce9 \"quoted\" \t\n",            // escapes' text, as text
    "",
};

}  // namespace

TEST_CASE("dump_json writes any bytes and parse_json reads them back", "[json]") {
    json j = {{"list", kAwkward}, {"nested", {{"deeper", kAwkward}}}};
    for (size_t i = 0; i < kAwkward.size(); ++i) j["keys"][kAwkward[i]] = i;
    for (int indent : {-1, 2}) {
        INFO("indent " << indent);
        std::string text = dump_json(j, indent);
        auto back = parse_json(text);
        REQUIRE(back.has_value());
        CHECK(*back == j);
    }
    // Ordered documents keep their order, keys included.
    ordered_json o = {{"z\xe9", 1}, {"a", 2}, {"m\xff", 3}};
    auto back = parse_json<ordered_json>(dump_json(o));
    REQUIRE(back.has_value());
    CHECK(*back == o);
    CHECK(back->begin().key() == "z\xe9");
}

TEST_CASE("dump_json writes a byte that is not UTF-8 as Python's escape", "[json]") {
    // Python: json.dumps(os.fsdecode(b"/caf\xe9")) == '"/caf\\udce9"'.
    CHECK(dump_json(json("/caf\xe9")) == R"("/caf\udce9")");
    CHECK(dump_json(json("\xc3")) == R"("\udcc3")");
    // Valid UTF-8 and NUL are written as nlohmann writes them.
    CHECK(dump_json(json("caf\xc3\xa9\0"s)) == json("caf\xc3\xa9\0"s).dump());
    CHECK(dump_json(json("\0\xe9"s)) == R"("\u0000\udce9")");
    CHECK(dump_json(json({{"k\xe9", "v"}})) == R"({"k\udce9":"v"})");
}

TEST_CASE("parse_json reads what other writers write", "[json]") {
    // Python's json.dumps (ensure_ascii): pairs, lone escapes and upper case.
    auto j = parse_json(R"(["caf\u00e9", "\ud83d\ude00", "\udcE9x", "\\udce9", "\u0000"])");
    REQUIRE(j.has_value());
    CHECK(*j == json::array({"caf\xc3\xa9", "\xf0\x9f\x98\x80", "\xe9x", "\\udce9", "\0"s}));
    // A lone escape outside U+DC80..U+DCFF stands for no byte: not JSON.
    for (const char* bad :
         {R"(["\udc41"])", R"(["\ud800"])", R"(["\ud800\u0041"])", "[\"\xe9\"]", "{nope", ""}) {
        INFO(bad);
        CHECK_FALSE(parse_json(bad).has_value());
    }
    // The message says where, without nlohmann's prefix.
    CHECK_THAT(parse_json("{nope").error(), Catch::StartsWith("parse error at line 1, column 3"));
}

TEST_CASE("parse_json of deep nesting does not recurse", "[json]") {
    std::string deep = std::string(100000, '[') + "\"\\udce9\"" + std::string(100000, ']');
    auto j = parse_json(deep);
    REQUIRE(j.has_value());
    const json* inner = &*j;
    while (inner->is_array()) inner = &(*inner)[0];
    CHECK(*inner == "\xe9");
}

TEST_CASE("fuzz: random bytes round-trip through dump_json and parse_json", "[json][fuzz]") {
    std::mt19937 random(7);
    for (int round = 0; round < 2000; ++round) {
        std::string s(random() % 12, '\0');
        for (char& c : s) c = static_cast<char>(random() % 8 == 0 ? random() % 4 : random());
        std::string hex;
        for (char c : s) hex += fmt::format("{:02x} ", static_cast<unsigned char>(c));
        INFO(hex);
        json j = {{s, s}};
        auto back = parse_json(dump_json(j));
        REQUIRE(back.has_value());
        CHECK(*back == j);
    }
}

TEST_CASE("utf8_length_at and is_utf8 follow RFC 3629", "[json]") {
    CHECK(utf8_length_at("a", 0) == 1);
    CHECK(utf8_length_at("\xc3\xa9", 0) == 2);
    CHECK(utf8_length_at("\xe2\x82\xac", 0) == 3);
    CHECK(utf8_length_at("\xf0\x9f\x98\x80", 0) == 4);
    for (const char* bad : {"\x80", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                            "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff"}) {
        INFO(bad);
        CHECK(utf8_length_at(bad, 0) == 0);
        CHECK_FALSE(is_utf8(std::string("/x/") + bad + "/y"));
    }
    CHECK(is_utf8("/caf\xc3\xa9/\xe2\x82\xac"));
    CHECK(is_utf8(""));
}

TEST_CASE("lib/ and cli/ write and read JSON text only through json_text", "[json]") {
    // nlohmann's own dump() throws on a path that is not UTF-8, and its parse
    // refuses the escapes dump_json writes for one.
    std::vector<std::string> found;
    for (const char* dir : {"lib", "cli", "lookup"}) {
        for (const auto& entry : std::filesystem::recursive_directory_iterator(
                 std::filesystem::path(BEKC_SOURCE_DIR) / dir)) {
            if (entry.path().filename() == "json_text.cpp") continue;
            std::ifstream in(entry.path());
            std::string line;
            for (int n = 1; std::getline(in, line); ++n)
                if (line.find(".dump(") != std::string::npos ||
                    line.find("json::parse(") != std::string::npos)
                    found.push_back(entry.path().string() + ":" + std::to_string(n));
        }
    }
    CHECK(found == std::vector<std::string>{});
}
