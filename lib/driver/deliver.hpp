// The last phase of `bekc build` (driver/build.hpp): the entry a hit found or
// a build published, handed to the user: its manifest and library (copied
// to -o DIR when asked) and the --depfile.
#pragma once

#include "driver/build_inputs.hpp"
#include "driver/build_options.hpp"
#include "driver/reporter.hpp"
#include "store/cache.hpp"

namespace bekc {

struct Delivered {
    fs::path manifest;  // the one the user should load (the entry's, or -o's copy)
    fs::path library;
};

// `hit`: the entry was found, not built here.
Delivered deliver(const BuildInputs& in, const BuildOptions& o, const Cache& cache, const Entry& e,
                  bool hit, const Reporter& report);

}  // namespace bekc
