// A library is linked with every symbol resolved (-Xlinker --no-undefined,
// plan/compile_plan.cpp), so a symbol nothing defines fails the build, not
// the load of a cached library: a function that is annotated and declared but
// never defined, or a library's function (cublasCreate) when the library is
// not linked. The linker names the symbol; these turn its words into errors
// in the user's terms: at the `// @BE` line that exported the function, or
// naming the library that defines the symbol and how to link it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diag/diagnostic.hpp"
#include "diag/linker_output.hpp"
#include "prep/inputs.hpp"
#include "util/error.hpp"

namespace bekc {

struct UndefinedExports {
    // One error per exported function the output names, at its annotation.
    std::vector<Diagnostic> errors;
    // Undefined symbols that name no exported function.
    std::vector<std::string> others;
};

UndefinedExports undefined_exports(const std::string& linker_output,
                                   const std::vector<SourceFile>& files);

// A failed link whose output names undefined symbols, told without the
// linker's words (which -v shows) and the paths of bekc's build directory.
struct UndefinedSymbolsReport {
    // What comes before the error: the errors at the annotations of exported
    // functions never defined, then (unless `verbose`: the caller showed the
    // whole output) the output's lines that say something else than which
    // symbols are undefined.
    std::string printed;
    // "linking lib<name>.so failed: ...": for an exported function never
    // defined, that; otherwise the other symbols, demangled, a few of each
    // library that defines them (library_defining) with how many more, and a
    // note per library on how to link it, in the CLI's terms (--ldflag) and
    // Python's (extra_ldflags); symbols of no known library are said to be
    // defined in no source of the module. `verbose`: the linker's output was
    // shown, else a note says -v shows it.
    Error error;
};

// nullopt when the output names no undefined symbol. `library`: the file
// name of the library linked; `nvcc_links`: nvcc links it (a CUDA input).
std::optional<UndefinedSymbolsReport> explain_undefined_symbols(
    const std::string& linker_output, const std::vector<SourceFile>& files,
    const std::string& library, bool nvcc_links, bool verbose);

}  // namespace bekc
