// This machine as a library's target (plan/target.hpp): its processor, its C
// library, its GPUs and the CUDA release its driver supports. Asked only by
// a hit that checks the machine in place of the toolchain
// (portable/portable.hpp), and by publish, for the builder's side.
#pragma once

#include "plan/target.hpp"
#include "run/runner.hpp"
#include "toolchain/tools.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"

namespace bekc {

// The processor (uname's machine) and the C library's version.
MachineTarget host_target();

// host_target() with the GPUs (toolchain/gpu_detect.hpp, remembered in the
// cache) and the driver's CUDA release (libcuda's cuDriverGetVersion, which
// needs no GPU context).
MachineTarget machine_target(const fs::path& cache_root, Runner& runner, const ToolLookup& tools);

// Whether a library linked to the shared CUDA runtime of CUDA release
// `cuda` ("13.0") finds a libcudart.so.<major> when it is loaded here: in
// `builder_dir` (its RUNPATH), loaded already in this process (JAX's, for a
// hit answered inside Python), in the `nvidia/*/lib` of a Python site (pip's
// CUDA runtime wheels, which JAX loads), in a CUDA toolkit under
// /usr/local, in $LD_LIBRARY_PATH or the system's library directories.
// Looks only at files and at what is loaded; loads nothing.
bool cudart_available(const std::string& cuda, const fs::path& builder_dir,
                      const std::vector<std::string>& python_sites, const EnvLookup& env);

}  // namespace bekc
