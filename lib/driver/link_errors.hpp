// A library is linked with every symbol resolved (-z defs), so a function
// that is annotated and declared but never defined fails the build. The
// linker names the symbol; these turn its words into an error at the
// `// @BE` line that exported the function.
#pragma once

#include <string>
#include <vector>

#include "diag/diagnostic.hpp"
#include "diag/linker_output.hpp"
#include "driver/inputs.hpp"

namespace bekc {

struct UndefinedExports {
    // One error per exported function the output names, at its annotation.
    std::vector<Diagnostic> errors;
    // Undefined symbols that name no exported function.
    std::vector<std::string> others;
};

UndefinedExports undefined_exports(const std::string& linker_output,
                                   const std::vector<SourceFile>& files);

}  // namespace bekc
