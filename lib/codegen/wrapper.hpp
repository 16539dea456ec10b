// Codegen: from a scanned source file to the translation unit that compiles it
// together with one XLA FFI handler per exported function.
#pragma once

#include <string>
#include <vector>

#include "scan/spec.hpp"
#include "scan/symbols.hpp"

namespace bekc {

struct WrapperRequest {
    std::string source_path;   // absolute path of the user's source, as #included
    std::string display_path;  // the path as the user named it, for #line and messages
    std::string wrapper_name;  // file name the wrapper is written to (for #line resets)
    std::string target_prefix;
    std::vector<FunctionSpec> functions;
};

// The whole wrapper translation unit. Throws FatalError when the source path
// cannot be named in an #include directive.
std::string render_wrapper(const WrapperRequest& request);

}  // namespace bekc
