// Which steps of a build keep their results in the step cache
// (store/step_cache.hpp), and the key of each. The key derives from the step
// itself, as the graph holds it: its phase, the identity of the program and
// of the toolkit, its arguments and the variables it gets, and the bytes of
// every file it reads, those its flags name included (a response file, a
// -specs= file: toolchain/flag_files.hpp). The build directory, a new one
// for each build, is a placeholder in all of them.
//
// Kept: cicc and ptxas (one architecture's device code) and the host
// compile of a split nvcc compile (plan/nvcc_phases.hpp). The host compile
// reads cudafe++'s output, whose file names carry the last architecture
// (x.compute_90.cudafe1.stub.c), and nvcc defines __CUDA_ARCH__ and
// __CUDA_ARCH_LIST__ for it. Without debug information (-g) those names
// reach nothing in the object, so they are a placeholder in its key. The
// headers it reads besides its inputs (the toolkit's crt/host_runtime.h and
// what that includes) are listed with their SHA-256 beside the object, from
// its dependency file, and checked before a reuse, as direct mode does. The
// two macros are not in the key either: their values are kept beside the
// object. A kept object fits a compile with other values when nothing it
// reads names them, or when its preprocessor makes the same of every
// directive with both (`-E -dD`: the same code and the same macros), the
// code itself naming neither.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "plan/build_graph.hpp"
#include "prep/build_inputs.hpp"
#include "run/execute.hpp"
#include "run/runner.hpp"
#include "store/step_cache.hpp"

namespace bekc {

class StepReuse {
  public:
    // `replace` (--force): what the steps compile takes the place of the
    // results the cache holds under their keys. `cwd`: where a step without
    // a directory of its own runs.
    StepReuse(Cache& cache, const BuildInputs& in, fs::path build_dir, fs::path cwd, Runner& runner,
              bool replace)
        : cache_(cache),
          in_(in),
          build_dir_(std::move(build_dir)),
          cwd_(std::move(cwd)),
          runner_(runner),
          replace_(replace) {}

    // Before `step` runs: Hit when its outputs were written from the cache,
    // so that it need not run; NotKept for a step the cache keeps nothing of.
    StepCacheOutcome reuse(const Step& step);

    // After `step` ran: keeps its outputs (best effort: a cache that cannot
    // take them costs the next build a compile, nothing else).
    void keep(const Step& step);

  private:
    struct Keyed {
        std::string digest;
        // A host compile's own text or arguments name the arch macros
        // (host_compile_meta).
        bool names_macros = false;
    };
    // The step's key, computed once (before the step runs, kept for after):
    // nullopt for a step that keeps nothing.
    const std::optional<Keyed>& key(const Step& step);
    std::optional<Keyed> compute_key(const Step& step) const;
    // Whether a kept host compile fits this one (host_compile_meta).
    bool host_compile_fits(const Step& step, const std::string& meta);
    // What the host compile's preprocessor makes of its directives with
    // these arch macros (-E -dD), their own definitions left out.
    std::optional<std::string> macro_probe(const Step& step,
                                           const std::vector<std::string>& macros);

    Cache& cache_;
    const BuildInputs& in_;
    fs::path build_dir_;
    fs::path cwd_;
    Runner& runner_;
    bool replace_;
    std::map<const Step*, std::optional<Keyed>> keys_;
};

}  // namespace bekc
