// The first phase of `bekc build` (driver/build.hpp): the options checked,
// the inputs read and scanned, the tools found and asked their versions, the
// archs chosen. Everything the graph and the keys read, as one BuildInputs.
#pragma once

#include "driver/build.hpp"
#include "driver/build_inputs.hpp"
#include "driver/reporter.hpp"

namespace bekc {

BuildInputs prepare(const BuildOptions& o, BuildContext& ctx, const Reporter& report);

// Where bekc's private directories go (util/fs.hpp, PrivateDirPlaces) for a
// build with this context's environment and this cache.
PrivateDirPlaces private_dir_places(const fs::path& cache_root, const BuildContext& ctx);

}  // namespace bekc
