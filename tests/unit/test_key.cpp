#include <catch2/catch.hpp>

#include "store/hash.hpp"
#include "store/key.hpp"

using namespace bekc;

TEST_CASE("the key record starts with the format version and kind", "[key]") {
    KeyBuilder k("build");
    k.add("opt", "-O3").add("jobs", int64_t{4});
    CHECK(k.explain() == "6:format 1:1\n4:kind 5:build\n3:opt 3:-O3\n4:jobs 1:4\n");
    CHECK(k.digest() == sha256_hex(k.explain()));
    CHECK(k.digest().size() == 64);
}

TEST_CASE("fields are delimited by length, not by content", "[key]") {
    auto digest_of = [](const std::vector<std::string>& flags) {
        return KeyBuilder("build").add_list("flags", flags).digest();
    };
    CHECK(digest_of({"-I", "-O2"}) != digest_of({"-I-O2"}));
    CHECK(digest_of({"a b"}) != digest_of({"a", "b"}));
    CHECK(digest_of({}) != digest_of({""}));
    CHECK(KeyBuilder("k").add("a", "bc").digest() != KeyBuilder("k").add("ab", "c").digest());
    // A value cannot fake the next field, even with the record's own syntax.
    CHECK(KeyBuilder("k").add("a", "x\n1:b 1:y").digest() !=
          KeyBuilder("k").add("a", "x").add("b", "y").digest());
}

TEST_CASE("lists record their length and indexed items", "[key]") {
    KeyBuilder k("build");
    k.add_list("defines", {"A=1", "B"});
    CHECK(k.explain() ==
          "6:format 1:1\n4:kind 5:build\n7:defines 1:2\n10:defines[0] 3:A=1\n10:defines[1] 1:B\n");
}

TEST_CASE("keys of different kinds never collide", "[key]") {
    CHECK(KeyBuilder("build").add("x", "1").digest() !=
          KeyBuilder("direct").add("x", "1").digest());
}

TEST_CASE("the same fields give the same key", "[key]") {
    auto make = [] { return KeyBuilder("build").add("src", "kernels.cu").add("opt", int64_t{3}); };
    CHECK(make().digest() == make().digest());
}

TEST_CASE("KeyBuilder::parts reads back what explain() holds", "[key]") {
    KeyBuilder k("direct");
    k.add("a b", "x:y z\nw").add("n", 3).add_list("l", {"", "q"});
    auto parts = KeyBuilder::parts(k.explain());
    using P = std::pair<std::string, std::string>;
    CHECK(parts == std::vector<P>{{"format", parts[0].second},
                                  {"kind", "direct"},
                                  {"a b", "x:y z\nw"},
                                  {"n", "3"},
                                  {"l", "2"},
                                  {"l[0]", ""},
                                  {"l[1]", "q"}});
    CHECK(KeyBuilder::parts("5:label 3:ab\n").empty());  // a wrong length
    CHECK(KeyBuilder::parts("1:a 1:b\nxx").size() == 1);
}
