// The execute phase of `bekc build` (driver/build.hpp): on a miss, the build
// graph planned in a new private directory and run through the context's
// Runner, and what the compilers and the linker said they read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "driver/build.hpp"
#include "driver/build_inputs.hpp"
#include "driver/keys.hpp"
#include "store/cache.hpp"

namespace bekc {

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
    // The host compiler's multiarch triplet (BuildInputs::multiarch), asked
    // here: only a miss sorts what the compilers read.
    std::string multiarch;
    // An input the compilers may not have read as bekc read it (its path):
    // nothing was built that anybody may use, and the build starts again.
    std::optional<std::string> edited;
};

// -j, or one job per core.
int jobs_wanted(const BuildOptions& o);

// Runs the build of `in` in a new private directory named `dir_name` plus a
// unique suffix. A failed step throws FatalError with the compiler's output
// on stderr, unless an input was edited meanwhile (then `edited` says which).
Executed execute(const BuildInputs& in, const BuildOptions& o, const std::string& dir_name,
                 const Cache& cache, BuildContext& ctx);

}  // namespace bekc
