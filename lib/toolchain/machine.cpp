#include "toolchain/machine.hpp"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include "toolchain/gpu_detect.hpp"

namespace bekc {

namespace {

// The CUDA release libcuda supports, or 0 without a driver. A library the
// process has loaded already (JAX's) is used as it is.
int driver_cuda_version() {
    void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return 0;
    using GetVersion = int (*)(int*);
    auto get = reinterpret_cast<GetVersion>(::dlsym(lib, "cuDriverGetVersion"));
    int version = 0;
    if (!get || get(&version) != 0) version = 0;
    ::dlclose(lib);
    return version;
}

}  // namespace

MachineTarget host_target() {
    MachineTarget m;
    struct utsname u {};
    if (::uname(&u) == 0) m.machine = u.machine;
    m.glibc = ::gnu_get_libc_version();
    return m;
}

MachineTarget machine_target(const fs::path& cache_root, Runner& runner, const ToolLookup& tools) {
    MachineTarget m = host_target();
    GpuDetection d = detect_gpus(cache_root, runner, tools);
    m.gpus = std::move(d.archs);
    m.gpus_how = std::move(d.how);
    if (!m.gpus.empty()) m.driver_cuda = driver_cuda_version();
    return m;
}

}  // namespace bekc
