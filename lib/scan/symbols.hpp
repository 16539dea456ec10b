// The names bekc gives what it generates for an exported function: the
// handler symbols the wrapper defines and the manifest names, and the XLA
// target. Codegen, input checks and the manifest all name them through here.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "util/text.hpp"

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

// Why `prefix` cannot start target names, empty when it can. brainevent takes
// any text (a module name such as "my-kernels" included): XLA names targets
// by string, and bekc writes them into generated code only as escaped C
// string literals. A control character would break a line of bekc's output.
inline std::string target_prefix_problem(std::string_view prefix) {
    if (prefix.empty()) return "is empty";
    if (has_control_char(prefix)) return "contains a control character";
    return {};
}

// Why `name` cannot name a module, empty when it can: what a target prefix
// may be, and one file name (brainevent names the library after it).
inline std::string module_name_problem(std::string_view name) {
    if (std::string problem = target_prefix_problem(name); !problem.empty()) return problem;
    // std::find, not find('/'): GCC 12 misreads the bound of the memchr that
    // find inlines here (-Wstringop-overread).
    if (std::find(name.begin(), name.end(), '/') != name.end()) return "contains '/'";
    if (name == "." || name == "..") return "is a directory name";
    return {};
}

// The library's file name for module `name`: ASCII letters, digits and
// "_.+-" are kept, every other byte becomes '_' ("my kernels" ->
// "libmy_kernels.so"), so nothing bekc writes or links depends on the
// spelling. The module keeps its name in the manifest and the targets.
inline std::string library_file_name(std::string_view name) {
    std::string out = "lib";
    for (char c : name) {
        auto u = static_cast<unsigned char>(c);
        bool keep = (u < 0x80 && std::isalnum(u)) || c == '_' || c == '.' || c == '+' || c == '-';
        out += keep ? c : '_';
    }
    return out + ".so";
}

}  // namespace bekc
