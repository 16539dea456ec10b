// Where a build's compilers look for headers, in the order they look: the
// directories the key guards against a header appearing earlier
// (graph/keys.hpp). One order per compiler the inputs use: the host
// compiler's for .cpp inputs (bekc's -I options, then --cxx-flag's), nvcc's
// for .cu inputs (nvcc puts what -Xcompiler passes the host compiler before
// its own -I, so a --cuda-flag=-Xcompiler=-Idir comes before bekc's -I).
#pragma once

#include <vector>

#include "prep/build_inputs.hpp"
#include "util/fs.hpp"

namespace bekc {

struct SearchOrder {
    // Absolute and physically normal (util/fs.hpp), each once: a directory
    // named twice is kept at its later place, which is where GCC searches
    // it (-I of a system directory) or later, so no directory searched
    // before a header's own is left out.
    std::vector<fs::path> dirs;
    // The first `quote_only` of `dirs` (-iquote) are searched for quoted
    // includes only; quoted includes look beside the including file first.
    size_t quote_only = 0;
    bool cuda = false;  // nvcc's, for the .cu inputs; else the host compiler's
};

// The host compiler's own directories after the -isystem ones, with its
// multiarch directory where it has one.
std::vector<fs::path> system_include_dirs(const std::string& multiarch);

// The order of each compiler that compiles an input of `in` (the host
// compiler's first), each: the -iquote directories, the -I ones (bekc's
// options, `runtime_dir` and XLA's headers, the flags'), $CPATH, -isystem,
// $CPLUS_INCLUDE_PATH, system_include_dirs (of the host compiler's
// `multiarch` triplet), -idirafter. The CUDA toolkit's directories are left
// out: its identity covers what is in them.
std::vector<SearchOrder> search_orders(const BuildInputs& in, const std::string& multiarch,
                                       const fs::path& runtime_dir, PhysicalPaths& paths);

// The include directories the compile flags add (--cxx-flag when a .cpp
// input reads them, --cuda-flag and nvcc's $NVCC_PREPEND_FLAGS /
// $NVCC_APPEND_FLAGS when a .cu input does, response files' included: the
// words read_flag_files keyed), made absolute as they are spelled: a relative
// `-Iinc` counts from the working directory.
std::vector<fs::path> flag_include_dirs(const BuildInputs& in);

}  // namespace bekc
