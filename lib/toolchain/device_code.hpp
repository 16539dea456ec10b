// The GPU code a built library holds: which SASS (cubin) and which PTX
// architectures the fat binaries nvcc's link embedded in it carry. A machine
// without a CUDA toolkit may take a prebuilt library from a cache only when
// its GPU can run one of them.
//
// The fat binaries are read from the `.nv_fatbin` section, the one the CUDA
// runtime registers. `__nv_relfatbin` is not read: it holds the relocatable
// device code of `-rdc` objects, kept for a later device link, which the
// runtime never loads (cuobjdump does not list it either), so counting its
// PTX would promise a GPU code the library cannot run.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "plan/arch.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

struct DeviceCode {
    std::vector<Arch> sass;  // cubins: sm_90, sm_90a, sm_100f, ...; sorted, unique
    std::vector<Arch> ptx;   // PTX for compute_XX (same suffixes); sorted, unique
    bool any() const { return !sass.empty() || !ptx.empty(); }
};

// A library with more fat binary entries than this is refused rather than
// read: nvcc writes one per architecture and kind per translation unit.
inline constexpr size_t kMaxFatbinEntries = 4096;

// The GPU code of the ELF file `elf_bytes`: every fat binary in its
// `.nv_fatbin` sections; none for a file without one (a C++-only library).
// A file that is not ELF64 little-endian, or whose fat binary headers are
// malformed or truncated, gives an ErrorKind::Usage Error naming
// `name_for_errors` and what is wrong. Pure: it reads only `elf_bytes`.
std::expected<DeviceCode, Error> parse_device_code(std::string_view elf_bytes,
                                                   const std::string& name_for_errors);

// parse_device_code over the file `library`, read whole (at most 1 GiB).
std::expected<DeviceCode, Error> read_device_code(const fs::path& library);

}  // namespace bekc
