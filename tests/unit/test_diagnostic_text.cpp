// Diagnostics read back from compiler-format text (diag/diagnostic_text.hpp),
// as a failed command's --json lists them.
#include <catch2/catch.hpp>
#include <string>

#include "diag/diagnostic_text.hpp"

using namespace bekc;

TEST_CASE("diagnostic text: GCC's lines with their notes", "[diagnostic_text]") {
    auto d = read_diagnostics(
        "/w/k.cpp: In function 'void f(BE::Tensor, BE::Tensor)':\n"
        "/w/k.cpp:4:13: error: 'y' was not declared in this scope\n"
        "    4 |     int x = y;\n"
        "      |             ^\n"
        "/w/k.cpp:2:6: note: 'f' declared here\n"
        "note: add the header\n"
        "bekc: error: compilation failed (exited with code 1)\n");
    REQUIRE(d.size() == 2);
    CHECK(d[0].severity == "error");
    CHECK(d[0].where.file == "/w/k.cpp");
    CHECK(d[0].where.line == 4);
    CHECK(d[0].where.column == 13);
    CHECK(d[0].message == "'y' was not declared in this scope");
    CHECK(d[0].notes ==
          std::vector<std::string>{"/w/k.cpp:2:6: 'f' declared here", "add the header"});
    CHECK(d[1].where.file.empty());
    CHECK(d[1].where.line == 0);
    CHECK(d[1].message == "compilation failed (exited with code 1)");
}

TEST_CASE("diagnostic text: nvcc's front end, a file without a line, a program",
          "[diagnostic_text]") {
    auto d = read_diagnostics(
        "k.cu(12): error: identifier \"x\" is undefined\r\n"
        "-03: error: no such file or directory\n"
        "/usr/bin/ld: k.o: in function `f':\n"
        "collect2: error: ld returned 1 exit status\n"
        "bekc: warning: k.cu: no stream\n"
        "k.h:3: fatal error: missing.h: No such file or directory\n");
    REQUIRE(d.size() == 5);
    CHECK(d[0].where.file == "k.cu");
    CHECK(d[0].where.line == 12);
    CHECK(d[0].where.column == 0);
    CHECK(d[0].message == "identifier \"x\" is undefined");
    CHECK(d[1].where.file == "-03");
    CHECK(d[1].where.line == 0);
    CHECK(d[2].where.file.empty());
    CHECK(d[3].severity == "warning");
    CHECK(d[3].message == "k.cu: no stream");
    CHECK(d[4].severity == "fatal error");
    CHECK(d[4].where.file == "k.h");
    CHECK(d[4].where.line == 3);
}

TEST_CASE("diagnostic text: a note before any diagnostic stands alone", "[diagnostic_text]") {
    auto d = read_diagnostics("note: first\nplain text\n");
    REQUIRE(d.size() == 1);
    CHECK(d[0].severity == "note");
    CHECK(d[0].message == "first");
}
