// What a linker's output says, read as text: the symbols it could not
// resolve, demangled. Pure, so the compile log and the link errors share it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bekc {

// The symbols a linker's output says are undefined, demangled where they are
// mangled C++ names: ld's "undefined reference to `f(int)'" and lld's
// "undefined symbol: f(int)", each once, in order.
std::vector<std::string> undefined_symbols(const std::string& linker_output);

// The demangled text of a mangled C++ name, or `name` itself.
std::string demangle(const std::string& name);

// The lines of a linker's output that say something besides which symbols
// are undefined and where they are used (ld's "in function" lines, lld's
// ">>> referenced by", collect2's "ld returned 1 exit status"), each with its
// newline: what a message about the undefined symbols leaves unsaid.
std::string lines_besides_undefined(const std::string& linker_output);

// A library that defines functions kernels call, known by the names it gives
// them (cublas...: cuBLAS).
struct KnownLibrary {
    std::string_view name;  // "cuBLAS"
    // How to link it: a flag for the compiler driver that links ("-lcublas").
    std::string_view link;
    // The same for a link through nvcc, when it differs (nvcc takes no
    // -fopenmp); empty: `link`.
    std::string_view nvcc_link;
    // Part of the CUDA toolkit: a link through the host compiler (a module of
    // C++ inputs only) finds it only with -L and the toolkit's library
    // directory, which nvcc searches itself.
    bool in_toolkit;
    // What else to know about it, or empty.
    std::string_view note;
};

// The library whose names `symbol` has: a prefix of the library's (cublas,
// cusparse, curand, cufft, cusolver, nccl, nvrtc, cuda for the runtime, cu
// for the driver API, ...) followed by an upper-case letter or nothing
// (cublasCreate_v2, not cublas_helper), or a prefix that ends in '_'
// (omp_, GOMP_); nullptr for a symbol of no library bekc knows.
const KnownLibrary* library_defining(std::string_view symbol);

// At most `shown` names, then how many more: "a", "a and b", "a, b and c",
// "a, b, c and 2 more".
std::string list_names(const std::vector<std::string>& names, size_t shown = 3);

}  // namespace bekc
