// The `#include` directives and `__has_include` operands of one source text,
// as written: pure functions like the rest of scan/. bekc uses the first to
// tell before compiling whether a source asks for headers only a particular
// install provides (XLA's FFI headers), the second to know which header names
// a compile asked about without reading them (graph/keys.cpp: a header that
// appears later must change the key).
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

struct HasIncludeOperand {
    std::string header;  // between the quotes or angle brackets
    bool angled = false;
    bool next = false;  // __has_include_next: the search starts after the current file's dir
    Location where;     // the first character of `__has_include`
};

// Every `__has_include("h")`, `__has_include(<h>)` and `__has_include_next`
// (also GCC's older `__has_include__` spellings) outside comments and string
// literals, in order, whatever `#if` surrounds it. An operand that is not a
// literal header name (a macro, `defined(__has_include)`) is skipped: it names
// no file.
std::vector<HasIncludeOperand> find_has_includes(std::string_view text, std::string_view file);

}  // namespace bekc
