// Codegen: the two kinds of generated translation unit. A wrapper per source
// includes the user's file unchanged and adds a table of its exported
// functions; one handlers file per library holds the XLA FFI entry points,
// which call through those tables. The handlers file includes no user header,
// so the host compiler builds it beside the sources' compiles
// (docs/ARCHITECTURE.md, "Two translation units").
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "scan/spec.hpp"
#include "scan/symbols.hpp"
#include "util/error.hpp"

namespace bekc {

struct WrapperRequest {
    std::string source_path;   // absolute path of the user's source, as #included
    std::string display_path;  // the path as the user named it, for #line and messages
    std::string wrapper_name;  // file name the wrapper is written to (for #line resets)
    std::string target_prefix;
    std::vector<FunctionSpec> functions;
    size_t unit = 0;  // the source's index in the library: its table is bekc_exports_<unit>
};

// The whole wrapper translation unit. A Usage error when the source path
// cannot be named in an #include directive, a Source error (at the second
// annotation) when two exports would define one handler symbol.
std::expected<std::string, Error> render_wrapper(const WrapperRequest& request);

// The name of unit `unit`'s table of exported functions.
std::string exports_table(size_t unit);

// The library's entry points: two per exported function of every wrapper
// (`units`, in unit order), each naming its target and what XLA must send.
std::string render_handlers(const std::string& library, const std::vector<WrapperRequest>& units);

}  // namespace bekc
