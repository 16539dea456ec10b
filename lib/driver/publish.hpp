// The publish phase of `bekc build` (driver/build.hpp): after a compile, what
// the compilers and the linker read sorted and hashed into the full key, the
// library and its manifests moved into the cache, the direct record written,
// the cache kept under its size limit, and the entry uploaded to
// --remote-cache. A result some file changed under is used but not cached.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/build.hpp"
#include "driver/execute_build.hpp"
#include "driver/reporter.hpp"
#include "remote/remote_cache.hpp"
#include "store/cache.hpp"

namespace bekc {

struct Published {
    Entry entry;
    std::string key;  // the full key, or the one-off key of a result not cached
    // The file that changed while the compilers ran, if one did: the entry
    // is the build's own (a one-off key), with no direct record or upload.
    std::optional<std::string> changed;
};

// `built` holds the library; `remote` is look_up's, when one is configured.
// With --force an existing entry of the same key is replaced, with a warning
// when the libraries differ. The entry holds target.json (where its library
// runs), and is recorded under both of `planned`'s keys.
Published publish(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
                  const Executed& built, Cache& cache, std::optional<RemoteCache>& remote,
                  BuildContext& ctx, const Reporter& report);

// After `published` entered the cache: its size limit (store/cache.hpp,
// amortised); problems are warnings.
void keep_under_limit(Cache& cache, const Entry& published, const std::string& direct_key,
                      const EnvLookup& env, const Reporter& report);

// The first dependency or flag file written since `start_ns`, if any.
std::optional<std::string> changed_during_build(const DependencySet& deps,
                                                const std::vector<FlagFile>& flag_files,
                                                int64_t start_ns);

}  // namespace bekc
