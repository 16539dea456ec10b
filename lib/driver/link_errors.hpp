// A library is linked with every symbol resolved (-z defs), so a function
// that is annotated and declared but never defined fails the build. The
// linker names the symbol; these turn its words into an error at the
// `// @BE` line that exported the function.
#pragma once

#include <string>
#include <vector>

#include "diag/diagnostic.hpp"
#include "driver/inputs.hpp"

namespace bekc {

// The symbols a linker's output says are undefined, demangled where they are
// mangled C++ names: ld's "undefined reference to `f(int)'" and lld's
// "undefined symbol: f(int)", each once, in order.
std::vector<std::string> undefined_symbols(const std::string& linker_output);

// The demangled text of a mangled C++ name, or `name` itself.
std::string demangle(const std::string& name);

struct UndefinedExports {
    // One error per exported function the output names, at its annotation.
    std::vector<Diagnostic> errors;
    // Undefined symbols that name no exported function.
    std::vector<std::string> others;
};

UndefinedExports undefined_exports(const std::string& linker_output,
                                   const std::vector<SourceFile>& files);

}  // namespace bekc
