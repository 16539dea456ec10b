#include "toolchain/machine.hpp"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <sys/utsname.h>

#include "toolchain/gpu_detect.hpp"
#include "util/text.hpp"

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

bool is_file(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}

}  // namespace

bool cudart_available(const std::string& cuda, const fs::path& builder_dir,
                      const std::vector<std::string>& python_sites, const EnvLookup& env) {
    const std::string major = cuda.substr(0, cuda.find('.'));
    const std::string soname = "libcudart.so." + major;
    if (!builder_dir.empty() && is_file(builder_dir / soname)) return true;
    if (void* loaded = ::dlopen(soname.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
        ::dlclose(loaded);
        return true;
    }
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (const auto& site : python_sites)
        for (const auto& e : fs::directory_iterator(fs::path(site) / "nvidia", ec))
            dirs.push_back(e.path() / "lib");
    for (const auto& e : fs::directory_iterator("/usr/local", ec))
        if (e.path().filename().string().starts_with("cuda")) {
            dirs.push_back(e.path() / "lib64");
            dirs.push_back(e.path() / "targets" / "x86_64-linux" / "lib");
            dirs.push_back(e.path() / "targets" / "sbsa-linux" / "lib");
        }
    if (auto ld = env("LD_LIBRARY_PATH"))
        for (const auto& d : split_nonempty(*ld, ":")) dirs.emplace_back(d);
    for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                          "/usr/lib", "/lib64", "/lib"})
        dirs.emplace_back(d);
    for (const auto& d : dirs)
        if (is_file(d / soname)) return true;
    return false;
}

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
