// The first phase of `bekc build` (driver/build.hpp): the options checked,
// the inputs read and scanned, the tools found and asked their versions, the
// archs chosen. Everything the graph and the keys read, as one BuildInputs.
#pragma once

#include <expected>

#include "prep/build_context.hpp"
#include "prep/build_inputs.hpp"
#include "prep/build_options.hpp"
#include "prep/reporter.hpp"
#include "util/error.hpp"

namespace bekc {

// Diagnostics and warnings go through `report`; an error in the inputs or
// the options is the Error (an empty message when its diagnostics were
// printed already).
std::expected<BuildInputs, Error> prepare(const BuildOptions& o, BuildContext& ctx,
                                          const Reporter& report);

}  // namespace bekc
