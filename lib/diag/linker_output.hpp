// What a linker's output says, read as text: the symbols it could not
// resolve, demangled. Pure, so the compile log and the link errors share it.
#pragma once

#include <string>
#include <vector>

namespace bekc {

// The symbols a linker's output says are undefined, demangled where they are
// mangled C++ names: ld's "undefined reference to `f(int)'" and lld's
// "undefined symbol: f(int)", each once, in order.
std::vector<std::string> undefined_symbols(const std::string& linker_output);

// The demangled text of a mangled C++ name, or `name` itself.
std::string demangle(const std::string& name);

}  // namespace bekc
