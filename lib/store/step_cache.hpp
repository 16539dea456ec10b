// The results of single build steps, beside the entries: what one nvcc phase
// (cicc or ptxas for one architecture, the host compile) wrote, kept under
// the key of everything the step reads (graph/step_keys.hpp). A build for a
// new architecture finds the other architectures' device code and the host
// object here and runs only what changed.
//
// steps/ab/cdef…/ (store/layout.hpp) holds the outputs as 0, 1, … in the
// step's order and meta.json, sealed (store/seal.hpp) and published by
// rename like the runtime trees, under the key's lock, so a reader never sees
// a partial one. Each use touches its last-use; the size limit removes the
// least recently used with the entries; `cache clear` and `cache verify`
// treat them as entries.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/cache.hpp"

namespace bekc {

struct StepResult {
    std::vector<std::string> files;  // the outputs' bytes, in the step's order
    std::string meta;                // what the step's keeper stored beside them
};

class StepCache {
  public:
    explicit StepCache(Cache& cache) : cache_(cache) {}

    // The result stored under `key` when it passes its seal in full, with
    // `count` files; nullopt otherwise. The bytes are those the seal checked.
    std::optional<StepResult> find(std::string_view key, size_t count) const;

    // Keeps copies of `files` and `meta` under `key`. A result already there
    // stays (the same key, the same result), unless `replace` (`--force`:
    // the user distrusts what the cache holds).
    std::expected<void, Error> store(std::string_view key, const std::vector<fs::path>& files,
                                     std::string_view meta, bool replace = false) const;

  private:
    Cache& cache_;
};

}  // namespace bekc
