// Diagnostics in the compiler format users already read:
//   file:line:col: error: message
//     source line
//     ^
//   note: how to fix it
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diag/location.hpp"

namespace bekc {

enum class Severity { Error, Warning };

struct Diagnostic {
    Severity severity = Severity::Error;
    Location where;           // file may be empty for diagnostics about no file
    std::string message;      // one sentence, no trailing period
    std::string fix;          // how to fix it; empty when obvious
    std::string source_line;  // the offending line, without its newline

    // Full text, ending in a newline.
    std::string render() const;
};

// The 1-based line `line` of `text`, without its line terminator.
std::string_view line_of(std::string_view text, int line);

Diagnostic make_error(std::string_view text, Location where, std::string message,
                      std::string fix = {});

bool has_errors(const std::vector<Diagnostic>& diags);
std::string render_all(const std::vector<Diagnostic>& diags);

}  // namespace bekc
