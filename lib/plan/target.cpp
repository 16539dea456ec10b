#include "plan/target.hpp"

#include <algorithm>
#include <charconv>

namespace bekc {

namespace {

// "2.36" -> {2, 36}; {-1, -1} when it is not a version.
std::pair<int, int> major_minor(const std::string& v) {
    int major = -1, minor = 0;
    const char* end = v.data() + v.size();
    auto [p, ec] = std::from_chars(v.data(), end, major);
    if (ec != std::errc() || major < 0) return {-1, -1};
    if (p != end && *p == '.') {
        auto [q, ec2] = std::from_chars(p + 1, end, minor);
        if (ec2 != std::errc()) return {-1, -1};
    }
    return {major, minor};
}

// SASS for `a` runs on a GPU of compute capability `gpu`: the same major
// version and a minor not above it, but for arch-specific code ("a"), which
// runs only on its own.
bool sass_runs_on(const Arch& a, const Arch& gpu) {
    if (a.suffix == "a") return a.number == gpu.number;
    return a.number / 10 == gpu.number / 10 && a.number <= gpu.number;
}

bool ptx_runs_on(const Arch& a, const Arch& gpu) {
    return a.suffix.empty() && a.number <= gpu.number;
}

std::string arch_names(const std::vector<Arch>& archs, bool ptx) {
    std::string out;
    for (const auto& a : archs) out += (out.empty() ? "" : ",") + (ptx ? a.compute() : a.sm());
    return out.empty() ? "none" : out;
}

// Why the host side cannot load here, or "".
std::string host_misfit(const LibraryTarget& lib, const MachineTarget& here) {
    if (!lib.machine.empty() && !here.machine.empty() && lib.machine != here.machine)
        return "built for " + lib.machine + ", and this machine is " + here.machine;
    auto need = major_minor(lib.glibc), have = major_minor(here.glibc);
    if (need.first >= 0 && have.first >= 0 && have < need)
        return "built against glibc " + lib.glibc + ", and this machine has " + here.glibc;
    return "";
}

// Why the device code cannot run on `gpu`, or "".
std::string gpu_misfit(const LibraryTarget& lib, const MachineTarget& here, const Arch& gpu,
                       bool sass_only) {
    const int release = cuda_version_number(lib.cuda);
    const int driver_major = here.driver_cuda / 1000 * 1000;
    bool sass = std::any_of(lib.sass.begin(), lib.sass.end(),
                            [&](const Arch& a) { return sass_runs_on(a, gpu); });
    if (sass && (here.driver_cuda == 0 || driver_major >= release / 1000 * 1000)) return "";
    bool ptx = std::any_of(lib.ptx.begin(), lib.ptx.end(),
                           [&](const Arch& a) { return ptx_runs_on(a, gpu); });
    if (ptx && !sass_only && (here.driver_cuda == 0 || here.driver_cuda >= release)) return "";
    if (sass || ptx)
        return "its CUDA " + lib.cuda + " code needs a newer driver than this one (CUDA " +
               std::to_string(here.driver_cuda / 1000) + "." +
               std::to_string(here.driver_cuda % 1000 / 10) + ")";
    return "it holds SASS for " + arch_names(lib.sass, false) + " and PTX for " +
           arch_names(lib.ptx, true) + ", none of which runs on " + gpu.sm() +
           (sass_only ? " without compiling PTX" : "");
}

}  // namespace

std::string cuda_release(const std::string& nvcc_version) {
    auto [major, minor] = major_minor(nvcc_version);
    if (major < 0) return "";
    return std::to_string(major) + "." + std::to_string(minor);
}

int cuda_version_number(const std::string& release) {
    auto [major, minor] = major_minor(release);
    if (major < 0 || minor < 0 || minor > 99) return 0;
    return major * 1000 + minor * 10;
}

std::string target_misfit(const LibraryTarget& lib, const MachineTarget& here,
                          const std::vector<Arch>& asked, bool sass_only) {
    if (std::string why = host_misfit(lib, here); !why.empty()) return why;
    if (!lib.is_cuda()) return "";
    if (!asked.empty()) {
        for (const auto& a : asked)
            if (std::find(lib.sass.begin(), lib.sass.end(), a) == lib.sass.end())
                return a.sm() + " was asked for, and it holds SASS for " +
                       arch_names(lib.sass, false) + " only";
        return "";
    }
    const std::vector<Arch> gpus =
        here.gpus.empty() ? std::vector<Arch>{Arch{kDefaultArch, ""}} : here.gpus;
    for (const auto& gpu : gpus)
        if (std::string why = gpu_misfit(lib, here, gpu, sass_only); !why.empty()) return why;
    return "";
}

std::string describe_target(const LibraryTarget& lib) {
    std::string host = lib.machine + (lib.glibc.empty() ? "" : ", glibc " + lib.glibc);
    if (!lib.is_cuda()) return "host code (" + host + ")";
    return "SASS " + arch_names(lib.sass, false) + ", PTX " + arch_names(lib.ptx, true) +
           " (CUDA " + lib.cuda + ", " + host + ")";
}

}  // namespace bekc
