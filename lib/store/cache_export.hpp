// Entries copied from one cache into another with their portable records:
// what `bekc pack` (package/pack.hpp) puts in a pack. A pack is a cache
// directory like any other, with a "pack" object in its marker
// (Cache::pack_info), used as a read-only layer (store/cache_layers.hpp).
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "store/cache.hpp"
#include "util/error.hpp"

namespace bekc {

// One build a portable record names: the portable key (graph/keys.hpp) and
// the entry's key.
struct PortableBuild {
    std::string portable_key, key;
    bool operator==(const PortableBuild&) const = default;
};

// Every build the portable records of `cache` name, whose entry is there.
std::vector<PortableBuild> portable_builds(const Cache& cache);

// Copies entry `b.key` of `from` into `to`, file by file (no link followed;
// the seal comes along, so `to` checks the entry as `from` did), and adds the
// records of `from`'s portable record for `b.portable_key` that name it to
// `to`'s. An entry `to` has already is left as it is.
std::expected<void, Error> copy_build(const Cache& from, const Cache& to, const PortableBuild& b);

}  // namespace bekc
