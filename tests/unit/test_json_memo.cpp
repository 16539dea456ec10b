// JsonMemo (lib/store/json_memo): the cache's small JSON memo files
// (tools.json, gpus.json, timings.json) read, checked and written back whole.
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "../helpers/temp_dir.hpp"
#include "store/json_memo.hpp"
#include "store/layout.hpp"

using namespace bekc;
using nlohmann::json;

namespace {

bool any_entry(const std::string&, const json&) {
    return true;
}

bool string_entry(const std::string&, const json& value) {
    return value.is_string();
}

}  // namespace

TEST_CASE("json memo: a missing file reads as an empty object", "[json_memo]") {
    test::TempDir tmp;
    JsonMemo memo(tmp / "cache", CacheLayout::tool_memo());
    CHECK(memo.read(any_entry) == json::object());
    CHECK_FALSE(fs::exists(tmp / "cache"));  // reading creates nothing
}

TEST_CASE("json memo: what is written reads back, and replaces the whole file", "[json_memo]") {
    test::TempDir tmp;
    JsonMemo memo(tmp.path(), CacheLayout::tool_memo());
    memo.write(json{{"a", "1"}, {"b", "2"}});
    CHECK(memo.read(any_entry) == json{{"a", "1"}, {"b", "2"}});
    memo.write(json{{"c", "3"}}, 1);
    CHECK(memo.read(any_entry) == json{{"c", "3"}});
    CHECK(test::read_file(tmp / "tools.json") == "{\n \"c\": \"3\"\n}");
}

TEST_CASE("json memo: a damaged file reads as an empty object", "[json_memo]") {
    test::TempDir tmp;
    JsonMemo memo(tmp.path(), CacheLayout::timing_memo());
    const std::vector<std::string> damaged = {
        "",         "{\"a\": ",
        "not json", "[1, 2]",
        "\"text\"", "42",
        "null",     std::string(2 << 20, ' ') + "{}"};  // over the 1 MiB a memo may have
    for (const std::string& text : damaged) {
        test::write_file(tmp / "timings.json", text);
        CHECK(memo.read(any_entry) == json::object());
    }
}

TEST_CASE("json memo: entries the check rejects are dropped", "[json_memo]") {
    test::TempDir tmp;
    JsonMemo memo(tmp.path(), CacheLayout::tool_memo());
    test::write_file(tmp / "tools.json",
                     R"({"good": "13.0", "number": 1, "deep": [[["x"]]], "null": null})");
    CHECK(memo.read(string_entry) == json{{"good", "13.0"}});
}

TEST_CASE("json memo: writers side by side never leave a torn file", "[json_memo]") {
    test::TempDir tmp;
    JsonMemo memo(tmp.path(), CacheLayout::gpu_memo());
    // Two memos large enough that a write takes more than one system call.
    std::vector<json> versions(2, json::object());
    for (int i = 0; i < 4000; ++i) {
        versions[0][std::to_string(i)] = std::string(20, 'a');
        versions[1][std::to_string(i)] = std::string(20, 'b');
    }
    std::atomic<bool> stop = false;
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w)
        writers.emplace_back([&, w] {
            for (int n = 0; n < 40; ++n) memo.write(versions[w]);
        });
    int reads = 0, torn = 0;
    std::thread reader([&] {
        while (!stop) {
            json read = memo.read(any_entry);
            ++reads;
            if (read != json::object() && read != versions[0] && read != versions[1]) ++torn;
        }
    });
    for (auto& t : writers) t.join();
    stop = true;
    reader.join();
    CHECK(reads > 0);
    CHECK(torn == 0);
    json last = memo.read(any_entry);
    CHECK((last == versions[0] || last == versions[1]));
    // No temporary file stays behind.
    for (const auto& e : fs::directory_iterator(tmp.path()))
        CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
}
