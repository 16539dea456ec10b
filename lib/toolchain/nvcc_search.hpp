// Which nvcc a CUDA build uses, and why (docs/cli.md, "Which nvcc"). The
// order agrees with brainevent's own pipeline, so routing brainevent through
// bekc keeps its compiler:
//
//   1. --nvcc, then $BEKC_NVCC: named by the user; one that does not exist is
//      an error, with no fallback;
//   2. brainevent's BRAINEVENT_NVCC_PATH, which bekc's Python loaders pass as
//      --brainevent-nvcc while they stand in for brainevent's;
//   3. $CUDA_HOME/bin/nvcc, then $CUDA_PATH/bin/nvcc;
//   4. a toolkit installed from pip (nvidia/cuNN/bin/nvcc, highest NN first,
//      then CUDA 12's nvidia/cuda_nvcc/bin/nvcc) and nvcc on $PATH, in the
//      order --nvcc-prefer (or $BEKC_NVCC_PREFER) says: pip first unless it
//      is "system". The pip toolkit is looked for in the site-packages that
//      --python-site names (the loaders pass their interpreter's), else in the
//      Python environments of toolchain/python_env.hpp, one at a time;
//   5. /usr/local/cuda/bin/nvcc.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "toolchain/tools.hpp"
#include "util/error.hpp"

namespace bekc {

struct NvccRequest {
    std::optional<std::string> flag;             // --nvcc
    std::optional<std::string> brainevent_nvcc;  // --brainevent-nvcc
    std::optional<std::string> prefer;           // --nvcc-prefer: "pip" or "system"
    // --python-site: the site-packages of the Python that runs bekc's loader.
    // When given, pip toolkits are looked for there only, and a not-found
    // error names the fixes a Python user has (no command-line flag).
    std::vector<std::string> python_sites;
};

struct NvccChoice {
    Tool tool;
    // Why this one, for `bekc doctor`, --explain-key and -v: "--nvcc",
    // "$CUDA_HOME", "pip toolkit nvidia/cu13 in /venv/lib/python3.12/site-packages", ...
    std::string how;
};

// A Toolchain error when no nvcc is found (the message lists every place
// searched and how to install or name one), a named one does not exist or a
// pip toolkit lacks a wheel nvcc needs; a Usage error for a bad
// --nvcc-prefer or $BEKC_NVCC_PREFER.
std::expected<NvccChoice, Error> find_nvcc(const NvccRequest& request, const ToolLookup& lookup);

// The root of the pip toolkit an nvcc belongs to (<site>/nvidia/cu13 or
// <site>/nvidia/cuda_nvcc), or nullopt for any other nvcc.
std::optional<fs::path> pip_toolkit_root(const Tool& nvcc);

// The toolkit's include directories, as its nvcc adds them: include/, and
// include/cccl/ where a CUDA 13 pip toolkit keeps CCCL (nvcc.profile says
// -isystem include/cccl). Only the directories that exist.
std::vector<fs::path> toolkit_include_dirs(const Tool& nvcc);

// The directories a pip toolkit's nvcc needs named: nvcc.profile names them
// for 13.5 and later, but the 13.0 wheels' profile names targets/<arch>/include
// and lib, which a wheel does not have, so their nvcc finds neither its
// headers nor libcudart_static.a. bekc names them itself, as brainevent's
// pipeline does: include/ (-I), include/cccl (-isystem), lib/stubs and lib/
// (-L); for CUDA 12's split wheels (nvidia/cuda_nvcc) also the include and
// lib directories of nvidia/cuda_runtime and nvidia/cuda_cccl. Only those
// that exist; all empty for any other nvcc.
struct ToolkitDirs {
    std::vector<fs::path> include, system_include, lib;
};
ToolkitDirs pip_toolkit_dirs(const Tool& nvcc);

// The CUDA runtime's shared library of nvcc's toolkit, libcudart.so.<major
// of `version`>: in lib/ of a pip toolkit (or nvidia/cuda_runtime/lib for
// CUDA 12's wheels), in lib64/ or targets/<arch>/lib/ of an installed one.
// nullopt when the toolkit has none.
std::optional<fs::path> shared_cudart(const Tool& nvcc, const std::string& version);

// The dist-info directories of the wheels that make up nvcc's pip toolkit
// ("nvidia_cuda_cccl-13.3.5.0.6.dist-info", ...), sorted; empty for any
// other nvcc. They version the toolkit's headers, which pip upgrades apart
// from nvcc itself, so they are part of the cache key.
std::vector<std::string> pip_toolkit_wheels(const Tool& nvcc);

// A note for a failed CUDA compile whose output says that a header of CCCL
// (nv/target, cub/, thrust/, cuda/std/) is missing while the toolkit is a pip
// one without nvidia-cuda-cccl: which wheel to install. "" otherwise.
std::string missing_cccl_note(const Tool& nvcc, const std::string& compiler_output);

}  // namespace bekc
