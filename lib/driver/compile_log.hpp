// Compiler output as users should see it: in full with -v, otherwise the
// first errors with their context, so a 1,000-line template backtrace does
// not bury the one line that matters.
#pragma once

#include <string>

namespace bekc {

// Keeps the lines up to and including the `max_errors`-th error's context,
// at most `max_lines`, and says how much was left out and how to see it.
std::string trim_compile_log(const std::string& log, int max_errors = 3, int max_lines = 40);

}  // namespace bekc
