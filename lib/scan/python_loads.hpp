// The kernel files a Python package loads, read from its source text: each
// `load_cuda_file(...)` / `load_cpp_file(...)` call, with its path argument,
// its module name when that is a string literal, and the keyword arguments
// that are literal lists of strings (its flags). `bekc build <package dir>` builds those files
// under those names, so the package's first use of each is a cache hit. Pure
// text processing, like the rest of scan/; it runs no Python.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace bekc {

struct KernelLoad {
    std::string function;                 // "load_cuda_file" or "load_cpp_file"
    std::vector<std::string> path_parts;  // literals of the path argument, in order
    std::string path_text;                // the path argument as written (scan/python_path.hpp)
    std::string name;                     // the `name=` literal; empty when not a literal
    std::vector<std::string> keywords;    // every keyword argument, in order
    // The keyword arguments whose value is a plain string literal, a list or
    // tuple of them, or None (no strings): `extra_cflags=['-DX=1']` gives
    // {"extra_cflags", {"-DX=1"}}. A value with anything else in it (a name,
    // an f-string, a backslash, adjacent literals, an operator) is not here.
    std::map<std::string, std::vector<std::string>> string_lists;
    int positional = 0;  // how many positional arguments
    int line = 0;        // of the function name
};

std::vector<KernelLoad> find_kernel_loads(std::string_view python_text);

}  // namespace bekc
