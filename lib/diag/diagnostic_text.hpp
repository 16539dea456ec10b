// Diagnostics read back from text in compiler format, for the JSON a
// failed command prints with --json (docs/cli.md, "Scripting"): bekc's own
// lines, GCC's and clang's `file:line:col: error: message`, and nvcc's
// front end's `file(line): error: message`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diag/location.hpp"

namespace bekc {

struct TextDiagnostic {
    std::string severity;  // "error", "fatal error" or "warning"
    // Where, as far as the line says: no file for a program's own lines
    // ("bekc: error: ...", "collect2: error: ...").
    Location where;
    std::string message;
    // The "note:" lines that follow it, each without "note: " (a note at a
    // place keeps it: "k.cpp:3:5: candidate is ...").
    std::vector<std::string> notes;
};

// Every diagnostic in `text`, in order. Lines that are none (a source line,
// a caret, "In function ...") are skipped; a note before any diagnostic is
// one of its own, of severity "note".
std::vector<TextDiagnostic> read_diagnostics(std::string_view text);

}  // namespace bekc
