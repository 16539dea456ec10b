// Diagnostics (lib/diag): the exact text users read, in the compiler format
// `file:line:col: error: message`, the source line, a caret and a note.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "diag/diagnostic.hpp"

using namespace bekc;

namespace {

Diagnostic diag(std::string file, int line, int column, std::string message, std::string fix = {},
                std::string source = {}) {
    Diagnostic d;
    d.where = {std::move(file), line, column};
    d.message = std::move(message);
    d.fix = std::move(fix);
    d.source_line = std::move(source);
    return d;
}

}  // namespace

TEST_CASE("diagnostic: the full form", "[diagnostic]") {
    CHECK(diag("k.cu", 12, 5, "unknown arg_spec token 'x'", "write 'arg'", "// @BE f x").render() ==
          "k.cu:12:5: error: unknown arg_spec token 'x'\n"
          "    // @BE f x\n"
          "        ^\n"
          "note: write 'arg'\n");
}

TEST_CASE("diagnostic: parts left out when unknown", "[diagnostic]") {
    // No column: no caret.
    CHECK(diag("k.cu", 3, 0, "m", "f", "void f();").render() ==
          "k.cu:3: error: m\n    void f();\nnote: f\n");
    // No line: no column and no source either.
    CHECK(diag("k.cu", 0, 7, "m", "f").render() == "k.cu: error: m\nnote: f\n");
    // No file.
    CHECK(diag("", 0, 0, "m").render() == "error: m\n");
    // No fix.
    CHECK(diag("a.cpp", 1, 1, "m", "", "x").render() == "a.cpp:1:1: error: m\n    x\n    ^\n");
    // A warning.
    Diagnostic w = diag("a.cpp", 2, 0, "m");
    w.severity = Severity::Warning;
    CHECK(w.render() == "a.cpp:2: warning: m\n");
}

TEST_CASE("diagnostic: the caret lines up under tabs", "[diagnostic]") {
    CHECK(diag("k.cu", 1, 4, "m", "", "\t\tab").render() ==
          "k.cu:1:4: error: m\n"
          "    \t\tab\n"
          "    \t\t ^\n");
    // A column past the end of the line stops at the end.
    CHECK(diag("k.cu", 1, 40, "m", "", "abc").render() ==
          "k.cu:1:40: error: m\n"
          "    abc\n"
          "       ^\n");
}

TEST_CASE("diagnostic: line_of", "[diagnostic]") {
    const std::string text = "one\r\ntwo\n\nfour";
    CHECK(line_of(text, 1) == "one");
    CHECK(line_of(text, 2) == "two");
    CHECK(line_of(text, 3).empty());
    CHECK(line_of(text, 4) == "four");
    CHECK(line_of(text, 5).empty());
    CHECK(line_of("", 1).empty());
    CHECK(line_of("x\n", 2).empty());
}

TEST_CASE("diagnostic: make_error takes the source line from the text", "[diagnostic]") {
    Diagnostic d = make_error("a\nbad line\r\nc\n", {"f.cpp", 2, 5}, "it is bad", "fix it");
    CHECK(d.severity == Severity::Error);
    CHECK(d.source_line == "bad line");
    CHECK(d.render() == "f.cpp:2:5: error: it is bad\n    bad line\n        ^\nnote: fix it\n");
    // Without a line there is nothing to show.
    CHECK(make_error("a\n", {"f.cpp", 0, 0}, "m").source_line.empty());
}

TEST_CASE("diagnostic: lists", "[diagnostic]") {
    std::vector<Diagnostic> none;
    CHECK_FALSE(has_errors(none));
    CHECK(render_all(none).empty());
    Diagnostic w = diag("a", 0, 0, "careful");
    w.severity = Severity::Warning;
    std::vector<Diagnostic> some = {w};
    CHECK_FALSE(has_errors(some));
    some.push_back(diag("b", 0, 0, "wrong"));
    CHECK(has_errors(some));
    CHECK(render_all(some) == "a: warning: careful\nb: error: wrong\n");
}
