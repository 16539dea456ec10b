// This machine as a library's target (plan/target.hpp): its processor, its C
// library, its GPUs and the CUDA release its driver supports. Asked only by
// a hit that checks the machine in place of the toolchain
// (driver/portable.hpp), and by publish, for the builder's side.
#pragma once

#include "plan/target.hpp"
#include "run/runner.hpp"
#include "toolchain/tools.hpp"
#include "util/fs.hpp"

namespace bekc {

// The processor (uname's machine) and the C library's version.
MachineTarget host_target();

// host_target() with the GPUs (toolchain/gpu_detect.hpp, remembered in the
// cache) and the driver's CUDA release (libcuda's cuDriverGetVersion, which
// needs no GPU context).
MachineTarget machine_target(const fs::path& cache_root, Runner& runner, const ToolLookup& tools);

}  // namespace bekc
