// Compiler output as users should see it: in full with -v, otherwise the
// first errors with their context, so a 1,000-line template backtrace does
// not bury the one line that matters.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace bekc {

// Keeps the lines up to and including the `max_errors`-th error's context,
// at most `max_lines`, and says how much was left out and how to see it.
std::string trim_compile_log(const std::string& log, int max_errors = 3, int max_lines = 40);

// A failed compile's output as the user should read it: each diagnostic
// once (nvcc preprocesses a source twice, so a missing header is reported
// twice), without the "In file included from" lines that name bekc's
// wrapper in its private build directory, and without nvcc's follow-up
// "Could not open input file ...cpp1.ii" once a real error was shown. A
// header that was not found gets a note naming -I and extra_include_paths.
std::string tidy_compile_log(const std::string& log);

// Notes for a failed link's output, whose linkers (nvlink, ld) name bekc's
// objects and mangled symbols: "note: 'OBJECT' is compiled from 'SOURCE'" for
// each of `objects` (object, the user's source) the output names, then
// "note: '_Z5shiftf' is shift(float)" for each quoted mangled C++ name.
// Empty when there is nothing to say.
std::string link_failure_notes(const std::string& output,
                               const std::vector<std::pair<std::string, std::string>>& objects);

}  // namespace bekc
