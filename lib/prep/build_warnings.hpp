// Warnings about a build that succeeds but is probably not what was meant.
// They are printed on every build, a cache hit included, unless -q.
#pragma once

#include <string>
#include <vector>

#include "diag/diagnostic.hpp"
#include "prep/inputs.hpp"

namespace bekc {

// One warning at the annotation of each function exported from a .cu file
// without a `stream` parameter: its kernels would launch on the default
// stream, not on the stream XLA runs the computation on.
std::vector<Diagnostic> default_stream_warnings(const std::vector<SourceFile>& files);

// "-I DIR" for each include directory that does not exist (as given, with
// the path bekc passes on).
std::vector<std::string> missing_include_dir_warnings(const std::vector<std::string>& given,
                                                      const std::vector<std::string>& resolved);

// For -v: one line for each include directory that holds a
// brainevent/common.h, whose brainevent/ headers the compilers then take in
// place of bekc's own (docs/annotations.md, "Include order"), so that no
// build switches to another set of headers without saying so.
std::vector<std::string> brainevent_header_notes(const std::vector<std::string>& resolved);

}  // namespace bekc
