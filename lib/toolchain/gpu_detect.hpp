// `--arch auto|native`: the GPUs of this machine. Asking nvidia-smi costs tens
// of milliseconds, too much for a cache hit, so the answer is remembered in
// the cache directory, keyed by the driver version and the GPUs the kernel
// lists under /proc/driver/nvidia; no driver there means no GPU, at no cost.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/arch.hpp"
#include "run/runner.hpp"
#include "toolchain/tools.hpp"
#include "util/fs.hpp"

namespace bekc {

struct GpuDetection {
    std::vector<Arch> archs;  // empty when no GPU was found
    std::string how;          // "nvidia-smi", "remembered", "no NVIDIA driver", ...
};

// nvidia-smi is found through `tools` and run through `runner`; `proc_driver`
// is where the kernel lists the driver and its GPUs (tests give another).
GpuDetection detect_gpus(const fs::path& cache_root, Runner& runner, const ToolLookup& tools,
                         const fs::path& proc_driver = "/proc/driver/nvidia");

}  // namespace bekc
