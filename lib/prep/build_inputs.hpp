// Everything `bekc build` decides before anything runs, as one value: the
// scanned inputs, the tools, the archs, the flags, the environment the tools
// read. The build graph (graph/recipe.hpp), the keys (graph/keys.hpp),
// the manifest and compile_commands.json all read this one value; none keeps
// a copy of its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/arch.hpp"
#include "plan/flags.hpp"
#include "prep/inputs.hpp"
#include "scan/symbols.hpp"
#include "store/base_dir.hpp"
#include "store/manifest.hpp"
#include "store/runtime_headers.hpp"
#include "toolchain/compiler_env.hpp"
#include "toolchain/flag_files.hpp"
#include "toolchain/tools.hpp"
#include "util/error.hpp"

namespace bekc {

struct BuildInputs {
    std::string name, target_prefix;
    std::vector<SourceFile> files;  // read and scanned, in command-line order
    std::optional<Tool> nvcc;       // when any input is CUDA and nvcc is found
    // A compiler the inputs need that is not found here (the host compiler,
    // or nvcc for a CUDA input). Such a build can only be a hit: the entry
    // comes through its portable key (portable/portable.hpp), and a miss is
    // this error. The tools' fields below are empty then.
    std::optional<Error> toolchain_missing;
    std::string nvcc_how;  // why this nvcc (toolchain/nvcc_search.hpp)
    // The wheels of nvcc's pip toolkit, which version its headers apart from
    // nvcc itself; empty for any other toolkit.
    std::vector<std::string> nvcc_wheels;
    Tool cxx;
    std::string nvcc_version, cxx_version;  // toolchain/tool_versions.hpp
    std::vector<Arch> archs;
    // `--arch auto` found no GPU and nothing else names an architecture, so
    // the build compiles for the default one: the warning that says so, in
    // the caller's terms, printed when a build compiles (never on a hit).
    std::string arch_fallback;
    PlanFlags flags;  // flags.cudart: "shared" or "static" for CUDA, else ""
    // flags.cudart "shared": the toolkit's libcudart.so.N the library links.
    std::optional<fs::path> cudart_library;
    // The link reads device code bekc cannot see, so nvcc's device link runs
    // (toolchain/link_search.hpp); found once, for the runtime's choice and
    // the plan.
    bool link_reads_opaque_code = false;
    // Files the flags make the tools read (response files, -specs=, ...),
    // with the bytes keyed (toolchain/flag_files.hpp).
    std::vector<FlagFile> flag_files;
    std::optional<fs::path> launcher;  // never changes the output: not keyed
    CompilerEnv env;                   // what the compilers and the linker read
    // The user's own cache, which a miss builds into, and the read-only
    // caches looked in after it, in order (store/cache_layers.hpp).
    fs::path cache_root;
    std::vector<fs::path> read_only_caches;
    // $BEKC_BASE_DIR: paths under it are keyed and recorded relative to it
    // and mapped out of what the compilers write (store/base_dir.hpp).
    BaseDir base;
    // Where this build's private directories (its build directory, nvcc's
    // plain-named links) may go after /tmp/bekc-<uid>: from the context's
    // environment and the own cache (private_dir_places).
    PrivateDirPlaces private_places;

    std::string library_file() const { return library_file_name(name); }
    bool any_cuda() const { return nvcc.has_value(); }
};

// What the lower layers take of a build, as their plain values: the
// manifest's facts (store/manifest.hpp) and which bekc_rt.o it links
// (store/runtime_headers.hpp).
ManifestInputs manifest_inputs(const BuildInputs& in);
RuntimeObjectId runtime_object_id(const BuildInputs& in);

}  // namespace bekc
