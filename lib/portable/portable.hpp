// Hits without a compiler (docs/cache.md, "Hits without a compiler"): a
// build whose toolchain is not found here, or whose direct key misses while
// read-only caches (a team's, packs) are configured, looks its portable key
// up (graph/keys.hpp, portable_key_builder: the inputs, their headers and
// the options, without the toolchain), and takes an entry only when its
// library runs on this machine (plan/target.hpp: the GPUs against its SASS
// and PTX, the driver against its CUDA release, the processor and the C
// library). The files the portable record lists (the user's headers and
// libraries) must hold, as in direct mode.
#pragma once

#include <optional>
#include <string>

#include "plan/target.hpp"
#include "prep/build_context.hpp"
#include "prep/build_inputs.hpp"
#include "prep/build_options.hpp"
#include "prep/reporter.hpp"
#include "remote/remote_cache.hpp"
#include "store/cache.hpp"

namespace bekc {

struct PortableLookup {
    std::optional<Entry> entry;
    fs::path layer;       // the read-only cache of the entry; empty: the own cache
    std::string checked;  // what the hit checked, for -v and --json
    std::string why_not;  // on a miss
};

// The first cache that holds an entry for `portable_key` whose library runs
// here: the own cache first when `own_too` (no toolchain here to rebuild
// with), then each read-only cache, then, when `own_too`, --remote-cache
// (its entry downloaded into the own cache); entries with SASS for every GPU before
// those that need the driver to compile PTX. Writes nothing to a read-only
// cache; a corrupt entry there is a warning and a miss.
PortableLookup find_portable(Cache& own, const std::string& portable_key, const BuildInputs& in,
                             const BuildOptions& o, bool own_too, BuildContext& ctx,
                             const Reporter& report);

// -v (and --explain-key, on stderr): which cache served a hit by the
// portable key, and what it checked.
void report_portable_hit(const BuildOptions& o, const fs::path& layer, const std::string& checked,
                         const Reporter& report);

// What publish writes into an entry's target.json: this machine, and the
// device code `library` holds (toolchain/device_code.hpp).
LibraryTarget library_target(const BuildInputs& in, const fs::path& library);

// The portable record of a published build: its dependencies less the
// system's (graph/dependencies.hpp, portable_dependencies), relative to
// portable_base(in), in `cache` and, when one is configured, the remote
// cache. `multiarch`: the host compiler's triplet, as the build's
// dependencies were sorted with it. A failure is a warning.
void record_portable(Cache& cache, const std::string& portable_key, const DirectInputs& direct,
                     const BuildInputs& in, const std::string& multiarch,
                     std::optional<RemoteCache>& remote, const Entry& entry,
                     const Reporter& report);

// The error of a build that found no toolchain and no fitting entry: the
// toolchain's error, and why each cache missed.
Error toolchain_missing_error(const BuildInputs& in, const PortableLookup& found);

}  // namespace bekc
