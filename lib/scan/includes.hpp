// The `#include` directives of one source text, as written: a pure function
// like the rest of scan/, so bekc can tell before compiling whether a source
// asks for headers only a particular install provides (XLA's FFI headers).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scan/spec.hpp"

namespace bekc {

struct IncludeDirective {
    std::string header;  // between the quotes or angle brackets
    bool angled = false;
    Location where;  // the '#'
};

// Every `#include` at the start of a line (after white space), in order,
// whatever `#if` surrounds it; directives inside block comments are skipped.
std::vector<IncludeDirective> find_includes(std::string_view text, std::string_view file);

}  // namespace bekc
