// The scanner: a pure function from (source text, file name) to the exported
// functions and their canonical arg_specs, or diagnostics. No I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diag/diagnostic.hpp"
#include "scan/arg_spec.hpp"
#include "scan/spec.hpp"

namespace bekc {

// A spec given on the command line (`--function 'name=arg,ret'`) or in a
// `--functions specs.json` file.
struct ExplicitSpec {
    std::string name;
    std::vector<RawToken> tokens;
    std::string origin;  // "--function" or the JSON file's path, for messages
};

struct ScanOptions {
    bool cuda = true;  // .cu file: `stream` allowed
    // When non-empty these name the exports and annotations are ignored, like
    // the `functions=` argument of brainevent's load_cuda_inline.
    std::vector<ExplicitSpec> explicit_specs;
};

struct ScanResult {
    std::vector<FunctionSpec> functions;      // in source order
    std::vector<Diagnostic> diagnostics;      // errors make the whole file fail
    std::vector<std::string> explicit_found;  // explicit specs resolved in this file
};

ScanResult scan_source(std::string_view text, std::string_view file, const ScanOptions& options);

// `.cu` files are CUDA; `.cpp`, `.cc`, `.cxx` are CPU.
bool is_cuda_source(std::string_view path);
bool is_cpu_source(std::string_view path);

// Parses the value of `--function`: "name=arg,arg,ret,stream".
std::optional<ExplicitSpec> parse_function_option(std::string_view value, std::string& error);

}  // namespace bekc
