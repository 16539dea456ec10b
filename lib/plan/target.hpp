// Where a built library can run, and whether it can run here: what a hit
// checks in place of the toolchain's identity when no compiler is found, or
// when a read-only cache holds a build by another toolchain
// (portable/portable.hpp; docs/cache.md, "Hits without a compiler"). Pure.
#pragma once

#include <string>
#include <vector>

#include "plan/arch.hpp"

namespace bekc {

// What a library needs of the machine that loads it. Written into its cache
// entry when it is published (store/target_file.hpp).
struct LibraryTarget {
    std::string machine;  // the builder's processor: "x86_64", "aarch64"
    std::string glibc;    // the C library it was built against: "2.36"
    // CUDA libraries: the toolkit release ("13.0"), the runtime it links
    // ("shared": libcudart.so.<major> at load time; "static"), and the device
    // code its fat binaries hold.
    std::string cuda, cudart;
    // "shared": the directory the builder's libcudart.so.<major> was in,
    // which the library's RUNPATH names.
    std::string cudart_dir;
    std::vector<Arch> sass, ptx;
    // Who built it, for -v: not checked.
    std::string nvcc_version, cxx_version;

    bool is_cuda() const { return !cuda.empty(); }
};

// This machine, as a hit sees it.
struct MachineTarget {
    std::string machine, glibc;
    std::vector<Arch> gpus;  // empty: no GPU found
    std::string gpus_how;    // "nvidia-smi", "no NVIDIA driver", ...
    // The CUDA release the driver supports (cuDriverGetVersion: 12080 for
    // 12.8); 0 when unknown.
    int driver_cuda = 0;
};

// nvcc's version ("13.0.88") as the release it is of ("13.0"); "" when it
// is not a version.
std::string cuda_release(const std::string& nvcc_version);

// "13.0" -> 13000, the driver's spelling; 0 when it is not a version.
int cuda_version_number(const std::string& release);

// Why `lib` cannot serve a build asked for `asked` (the --arch list; empty
// for auto and native: the GPUs here) on `here`, or "" when it can. With
// `sass_only`, a GPU the library holds only PTX for does not count: a
// lookup asks for that first, and takes PTX, which the driver compiles at
// load, only when no entry has SASS for every GPU.
//  - the processor must be the same, and the C library here as new or newer;
//  - a CUDA library needs, for each GPU here (or each arch asked), SASS of
//    the same major version and a minor not above it (sm_80 runs on 8.6; an
//    arch-specific sm_90a only on 9.0), or else PTX of a version not above
//    it; an arch asked by name needs its own SASS;
//  - the driver must support the library's CUDA major release for SASS, and
//    its exact release for PTX, which it compiles;
//  - with no GPU found and no arch asked, nothing CUDA runs here at all, and
//    a CUDA library is served as a build would make one: for the default
//    arch, sm_80, or PTX at most that.
std::string target_misfit(const LibraryTarget& lib, const MachineTarget& here,
                          const std::vector<Arch>& asked, bool sass_only);

// "sm_80,sm_90 + compute_90 PTX (CUDA 13.0, x86_64, glibc 2.36)", for -v.
std::string describe_target(const LibraryTarget& lib);

}  // namespace bekc
