// The phases of `bekc build` after plan (driver/build.hpp), each a function
// returning one value that the next ones read:
//   look_up   LookUp     the local caches through the direct record (the
//                        user's own, then each read-only cache:
//                        store/cache_layers.hpp), then, on a miss, the
//                        per-key lock in the own cache (one process
//                        compiles, the others wait) and the local caches
//                        again, then --remote-cache. A miss ends holding the
//                        lock, which publish needs.
//   execute   Executed   on a miss, the planned graph filled in with a new
//                        private directory and run through the context's
//                        Runner; what the compilers and the linker said they
//                        read.
//   publish   Published  what they read sorted and hashed into the full key,
//                        the library and its manifests moved into the cache,
//                        the direct record written, the cache kept under its
//                        size limit, the entry uploaded to --remote-cache. A
//                        result some file changed under is used but not
//                        cached.
//   deliver   Delivered  the entry a hit found or a build published, handed
//                        to the user: its manifest and library (copied to -o
//                        DIR when asked) and the --depfile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "driver/build.hpp"
#include "graph/keys.hpp"
#include "prep/build_context.hpp"
#include "prep/build_inputs.hpp"
#include "prep/build_options.hpp"
#include "prep/reporter.hpp"
#include "remote/remote_cache.hpp"
#include "store/cache.hpp"

namespace bekc {

// ---- look_up (driver/look_up.cpp) ----

struct LookUp {
    std::optional<Entry> entry;  // a hit, local or remote
    bool remote_hit = false;
    fs::path layer;       // the read-only cache that served the hit; empty: the own cache
    std::string checked;  // a hit by the portable key: what it checked
    // Why the local cache missed (for -v and --json; "--force", "no record",
    // ...): set on a miss and on a hit after one.
    std::string miss_reason;
    // On a miss (and a hit after the wait): the lock on the direct key, held
    // until the entry is published.
    std::optional<FileLock> lock;
    std::optional<RemoteCache> remote;  // --remote-cache, for publish to upload to
};

// What the local caches hold for a direct key: the entry (the direct
// record's, with its integrity checked: store/cache.hpp) of the first that
// holds it, `cache` (the own one) first, then each of
// in.read_only_caches; or why none (the own cache's reason: a miss is an
// answer, not an error). Takes no lock and writes nothing to a read-only
// cache, whose damaged entry is a warning and a miss there. `force`: none.
// `repair`: a corrupt entry of the own cache is removed (Cache::lookup).
struct LocalLookup {
    std::optional<Entry> entry;
    std::string miss_reason;
    fs::path layer;            // the read-only cache of the entry; empty: the own cache
    std::string checked = {};  // a hit by the portable key: what it checked
};
LocalLookup find_local(Cache& cache, const std::string& direct_key, const BuildInputs& in,
                       bool force, const Reporter& report, bool repair = true);

// With --force nothing is found, locally or remotely, but the lock is taken.
// A corrupt entry is a miss with a warning; a lock not obtained is fatal.
// With read-only caches, a direct miss looks the portable key up in them
// (portable/portable.hpp) before taking the lock.
LookUp look_up(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
               Cache& cache, BuildContext& ctx, const Reporter& report);

// The local caches for `planned`: find_local, then, with read-only caches,
// their entries by the portable key that run here (portable/portable.hpp).
LocalLookup find_local_or_portable(Cache& cache, const PlannedBuild& planned, const BuildInputs& in,
                                   const BuildOptions& o, BuildContext& ctx, const Reporter& report,
                                   bool repair = true);

// ---- execute (driver/execute_build.cpp) ----

// The private directory a build compiles in (util/fs.hpp, private_temp_dir),
// removed with everything in it when the value goes.
class BuildDir {
  public:
    explicit BuildDir(fs::path path) : path_(std::move(path)) {}
    BuildDir(BuildDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
    BuildDir& operator=(BuildDir&&) = delete;
    BuildDir(const BuildDir&) = delete;
    ~BuildDir();
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

struct Executed {
    explicit Executed(BuildDir d) : dir(std::move(d)) {}
    BuildDir dir;  // holds the library until publish moves it into the cache
    ReportedDependencies dependencies;
    int64_t start_ns = 0;  // when the compile started (publish's changed-during-build)
    double seconds = 0;    // the compile's wall time
    // The host compiler's multiarch triplet ("x86_64-linux-gnu"), which names
    // its system include and library directories, asked here: only a miss
    // sorts what the compilers read (publish). BuildInputs is not changed.
    std::string multiarch;
    // An input the compilers may not have read as bekc read it (its path):
    // nothing was built that anybody may use, and the build starts again.
    std::optional<std::string> edited;
};

// Fills `planned`'s graph in with a new private directory (named
// planned.dir_name plus a unique suffix), the cache's runtime and the links
// nvcc needs, splits nvcc's compiles into their phases, and runs it. A failed
// step throws FatalError with the compiler's output on stderr, unless an
// input was edited meanwhile (then `edited` says which).
Executed execute(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
                 const Cache& cache, BuildContext& ctx);

// ---- publish (driver/publish.cpp) ----

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

// ---- deliver (driver/deliver.cpp) ----

struct Delivered {
    fs::path manifest;  // the one the user should load (the entry's, or -o's copy)
    fs::path library;
};

// `hit`: the entry was found, not built here.
Delivered deliver(const BuildInputs& in, const BuildOptions& o, const Cache& cache, const Entry& e,
                  bool hit, const Reporter& report);

}  // namespace bekc
