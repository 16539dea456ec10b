// The names bekc gives what it generates for an exported function: the
// handler symbols the wrapper defines and the manifest names, and the XLA
// target. Codegen, input checks and the manifest all name them through here.
#pragma once

#include <string>

namespace bekc {

// The handler that reports the command-buffer trait.
inline std::string handler_symbol(const std::string& function) {
    return "bekc_ffi_" + function;
}

// The same handler without the trait (--no-cuda-graph).
inline std::string handler_symbol_nograph(const std::string& function) {
    return handler_symbol(function) + "_nograph";
}

// The XLA custom-call target: "<prefix>.<function>".
inline std::string target_name(const std::string& prefix, const std::string& function) {
    return prefix + "." + function;
}

}  // namespace bekc
