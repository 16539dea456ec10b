#include <catch2/catch.hpp>

#include "../helpers/temp_dir.hpp"
#include "store/hash.hpp"

using namespace bekc;

TEST_CASE("sha256 of bytes matches the published test vectors", "[hash]") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("incremental sha256 equals one-shot", "[hash]") {
    Sha256 h;
    h.update("a");
    h.update("");
    h.update("bc");
    CHECK(h.final_hex() == sha256_hex("abc"));
}

TEST_CASE("file hashes equal byte hashes across read-buffer boundaries", "[hash]") {
    test::TempDir tmp;
    std::string big;
    for (int i = 0; big.size() < 3 * 1024 * 1024 + 17; ++i) big += std::to_string(i) + ",";
    test::write_file(tmp / "big.bin", big);
    CHECK(sha256_file(tmp / "big.bin").value() == sha256_hex(big));
    CHECK(xxh128_file(tmp / "big.bin").value() == xxh128_hex(big));
    test::write_file(tmp / "empty", "");
    CHECK(sha256_file(tmp / "empty").value() == sha256_hex(""));
}

TEST_CASE("xxh128 is XXH3-128 in canonical hex", "[hash]") {
    CHECK(xxh128_hex("") == "99aa06d3014798d86001c324468d497f");
    CHECK(xxh128_hex("a").size() == 32);
    CHECK(xxh128_hex("a") != xxh128_hex("b"));
}

TEST_CASE("hashing a missing file is an error naming it", "[hash]") {
    test::TempDir tmp;
    auto sha = sha256_file(tmp / "missing.h");
    REQUIRE_FALSE(sha.has_value());
    CHECK_THAT(sha.error().message,
               Catch::Contains("missing.h") && Catch::Contains("No such file"));
    CHECK_FALSE(xxh128_file(tmp / "missing.h").has_value());
}

TEST_CASE("one digest of a file gives both hashes, its stat and, when asked, its bytes", "[hash]") {
    test::TempDir tmp;
    std::string big;
    for (int i = 0; big.size() < 2 * 1024 * 1024 + 5; ++i) big += std::to_string(i) + ",";
    for (const std::string& text : {std::string(), std::string("abc"), big}) {
        test::write_file(tmp / "f", text);
        auto d = digest_file(tmp / "f");
        REQUIRE(d.has_value());
        CHECK(d->sha256 == sha256_hex(text));
        CHECK(d->xxh128 == xxh128_hex(text));
        CHECK(d->stat == stat_file(tmp / "f").value());
        CHECK_FALSE(d->changed);
        CHECK(d->text.empty());
        CHECK(digest_file(tmp / "f", true).value().text == text);
    }
    auto missing = digest_file(tmp / "missing.h");
    REQUIRE_FALSE(missing.has_value());
    CHECK_THAT(missing.error().message,
               Catch::Contains("missing.h") && Catch::Contains("No such file"));
    auto dir = digest_file(tmp.path());
    REQUIRE_FALSE(dir.has_value());
    CHECK_THAT(dir.error().message, Catch::Contains("a directory"));
}
