// The first stage of every command: expanding the inputs named on the command
// line into source files, reading them, and scanning each one.
#pragma once

#include <string>
#include <vector>

#include "diag/diagnostic.hpp"
#include "scan/scanner.hpp"
#include "util/fs.hpp"

namespace bekc {

struct SourceFile {
    fs::path path;      // as the user named it (or dir / name)
    bool cuda = false;  // .cu
    std::string text;
    std::vector<FunctionSpec> functions;
};

struct ScannedInputs {
    std::vector<SourceFile> files;  // in command-line order, directories sorted
    std::vector<Diagnostic> diagnostics;
};

// Files stand for themselves; a directory for every .cu/.cpp/.cc/.cxx directly
// in it, sorted by name. Unknown extensions and missing paths throw FatalError
// (usage errors).
std::vector<fs::path> expand_inputs(const std::vector<std::string>& inputs);

enum class InputsAre {
    OneModule,   // `bekc build`: the files link into one library
    Independent  // `bekc inspect`: each file reported on its own
};

// Reads and scans every file. Cross-file rules live here: explicit specs that
// no input defines and, for one module, a function defined in two inputs.
ScannedInputs scan_inputs(const std::vector<fs::path>& paths,
                          const std::vector<ExplicitSpec>& explicit_specs,
                          InputsAre kind = InputsAre::OneModule);

// Reads `--functions FILE.json`: {"name": ["arg", "ret", ...]}.
std::vector<ExplicitSpec> read_functions_json(const fs::path& path);

// Every `--function` value, then the `--functions` file if given. Bad values
// throw FatalError (usage errors).
std::vector<ExplicitSpec> collect_explicit_specs(const std::vector<std::string>& functions,
                                                 const std::string& functions_json);

}  // namespace bekc
