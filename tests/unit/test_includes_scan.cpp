// The __has_include scanner (lib/scan/includes): which header names a source
// asks about without including them. Pure, so no files are needed.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "scan/includes.hpp"

using namespace bekc;

namespace {

// "name" for quoted operands, <name> for angled ones, a trailing "+next" for
// __has_include_next: one string per operand, so a failure shows them all.
std::vector<std::string> operands(std::string_view text) {
    std::vector<std::string> out;
    for (const auto& o : find_has_includes(text, "k.cpp")) {
        std::string s = o.angled ? "<" + o.header + ">" : "\"" + o.header + "\"";
        if (o.next) s += "+next";
        out.push_back(s);
    }
    return out;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("has_include: quoted and angled operands in #if and #elif", "[scan][has_include]") {
    std::string text =
        "#if __has_include(\"opt.h\")\n"
        "#include \"opt.h\"\n"
        "#elif __has_include(<sys/opt.h>)\n"
        "#endif\n";
    CHECK(operands(text) == Names{"\"opt.h\"", "<sys/opt.h>"});
}

TEST_CASE("has_include: location of each operand", "[scan][has_include]") {
    auto found =
        find_has_includes("int x;\n#  if defined(A) && __has_include(<a.h>)\n", "src/k.cu");
    REQUIRE(found.size() == 1);
    CHECK(found[0].where.file == "src/k.cu");
    CHECK(found[0].where.line == 2);
    CHECK(found[0].where.column == 21);
}

TEST_CASE("has_include: white space and line splices around the operand", "[scan][has_include]") {
    CHECK(operands("#if __has_include ( \"a.h\" )\n") == Names{"\"a.h\""});
    CHECK(operands("#if __has_include(\t<b.h>\t)\n") == Names{"<b.h>"});
    auto found =
        find_has_includes("#if __has_include( \\\n  \"c.h\")\n#if __has_include(<d.h>)\n", "k.cpp");
    REQUIRE(found.size() == 2);
    CHECK(found[0].header == "c.h");
    CHECK(found[1].header == "d.h");
    CHECK(found[1].where.line == 3);  // the splice counted as a line
}

TEST_CASE("has_include: __has_include_next and GCC's older spellings", "[scan][has_include]") {
    CHECK(operands("#if __has_include_next(<math.h>)\n#endif\n") == Names{"<math.h>+next"});
    CHECK(operands("#if __has_include__(\"x.h\") || __has_include_next__(<y.h>)\n") ==
          Names{"\"x.h\"", "<y.h>+next"});
}

TEST_CASE("has_include: operands in macro bodies count", "[scan][has_include]") {
    // GCC and clang allow the operator in a macro that an #if expands.
    CHECK(operands("#define HAVE_OPT __has_include(\"opt.h\")\n#if HAVE_OPT\n#endif\n") ==
          Names{"\"opt.h\""});
}

TEST_CASE("has_include: what is not a header-name operand is skipped", "[scan][has_include]") {
    // The feature test itself.
    CHECK(operands("#if defined(__has_include)\n#ifdef __has_include\n#endif\n#endif\n").empty());
    // A macro operand names no file bekc could know.
    CHECK(operands("#define H <x.h>\n#if __has_include(H)\n#endif\n").empty());
    // Empty, unterminated, or without the closing parenthesis.
    CHECK(operands("#if __has_include(\"\")\n").empty());
    CHECK(operands("#if __has_include(<a.h\n#endif\n").empty());
    CHECK(operands("#if __has_include(\"a.h\"\n").empty());
    // Other identifiers that merely contain the name.
    CHECK(operands("#if my__has_include(\"a.h\") || __has_includes(\"b.h\")\n").empty());
}

TEST_CASE("has_include: comments hide operands, and only comments", "[scan][has_include]") {
    CHECK(operands("// #if __has_include(\"a.h\")\n").empty());
    CHECK(operands("/* #if __has_include(\"a.h\")\n  __has_include(<b.h>) */\n").empty());
    CHECK(operands("/* a */ #if __has_include(\"c.h\") // tail\n") == Names{"\"c.h\""});
    // A line comment continued by a splice swallows the next line too.
    CHECK(operands("// note \\\n__has_include(\"d.h\")\n__has_include(\"e.h\")\n") ==
          Names{"\"e.h\""});
}

TEST_CASE("has_include: string and character literals do not start comments",
          "[scan][has_include]") {
    // A "/*" in a string must not hide what follows.
    std::string text =
        "const char* s = \"/*\";\n"
        "#if __has_include(\"a.h\")\n"
        "#endif\n"
        "char q = '\"'; const char* t = \"*/ __has_include(<no.h>)\";\n"
        "#if __has_include(<b.h>)\n";
    CHECK(operands(text) == Names{"\"a.h\"", "<b.h>"});
}

TEST_CASE("has_include: raw strings are skipped whole", "[scan][has_include]") {
    std::string text =
        "auto s = R\"x(\n"
        "  __has_include(\"in_raw.h\") )\" /* still inside\n"
        ")x\";\n"
        "#if __has_include(\"after.h\")\n";
    auto found = find_has_includes(text, "k.cpp");
    REQUIRE(found.size() == 1);
    CHECK(found[0].header == "after.h");
    CHECK(found[0].where.line == 4);
}

TEST_CASE("has_include: digit separators are not character literals", "[scan][has_include]") {
    CHECK(operands("#if X > 1'000'000 && __has_include(\"a.h\")\n") == Names{"\"a.h\""});
}

TEST_CASE("has_include: an unterminated literal ends at its line", "[scan][has_include]") {
    CHECK(operands("#error don't\n#if __has_include(<a.h>)\n") == Names{"<a.h>"});
}

TEST_CASE("has_include: non-ASCII text around operands", "[scan][has_include]") {
    CHECK(operands("// \xc3\xa9t\xc3\xa9\n#if __has_include(\"d\xc3\xa9j\xc3\xa0.h\")\n") ==
          Names{"\"d\xc3\xa9j\xc3\xa0.h\""});
    // A UTF-8 identifier that ends in the operator's name is another identifier.
    CHECK(operands("int \xc3\xa9__has_include(\"a.h\");\n").empty());
}

TEST_CASE("has_include: #include lines are not operands", "[scan][has_include]") {
    CHECK(operands("#include \"a.h\"\n#include <b.h>\n").empty());
}
