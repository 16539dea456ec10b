// The compile options of a build, as the user gave them: one struct that the
// CLI fills (prep/build_options.hpp), the plan turns into command lines
// (plan/build_graph.hpp) and the manifest records. The cache key is derived
// from the commands they produce, so a new option needs no key code.
#pragma once

#include <string>
#include <vector>

namespace bekc {

struct CompileFlags {
    int opt_level = 3;
    bool fast_math = false;
    std::string cxx_std = "c++17";
    std::vector<std::string> include_dirs, defines, cuda_flags, cxx_flags, ldflags;
    // Each handed to the linker as exactly one argument (`-Xlinker ARG`).
    std::vector<std::string> linker_args;
    // The CUDA runtime a CUDA library links, nvcc's --cudart: "shared" (the
    // toolkit's libcudart.so.N, found through the library's RUNPATH or the
    // one the process has loaded: JAX's) or "static". The CLI's "" means
    // "shared" where the toolkit allows it (prep/cudart_choice.hpp).
    std::string cudart;

    bool operator==(const CompileFlags&) const = default;
};

// What the plan compiles with: the user's flags, include directories made
// absolute, and XLA's FFI headers (xla/ffi/api/ffi.h) for sources that
// include them.
struct PlanFlags : CompileFlags {
    std::string xla_include;
};

}  // namespace bekc
