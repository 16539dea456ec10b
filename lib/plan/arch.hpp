// GPU architecture lists: `--arch sm_90,80,9.0,sm_90a`, `native`, `auto`.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace bekc {

struct Arch {
    int number = 0;      // 90 for sm_90
    std::string suffix;  // "a" or "f" for arch-specific feature sets, else ""

    std::string sm() const { return "sm_" + std::to_string(number) + suffix; }
    std::string compute() const { return "compute_" + std::to_string(number) + suffix; }
    auto operator<=>(const Arch&) const = default;
};

// The arch set bekc uses when `auto` finds no GPU: documented in --help.
inline constexpr int kDefaultArch = 80;

// What a refusal's message starts with, and the words of the two refusals a
// caller tells apart: a spelling that reads as a major version below 2, and
// one no architecture reads as. bekc's Python loaders raise brainevent's
// exception for each (`bekc config --json`'s "arch_refusals").
inline constexpr std::string_view kArchRefusalPrefix = "--arch: ";
inline constexpr std::string_view kArchNoGpuWords = "no CUDA GPU has a major version below 2";
inline constexpr std::string_view kArchUnreadableWords = "is not a GPU architecture";

// Parses an explicit, comma-separated list; sorted and de-duplicated. A
// malformed element, or one nvcc does not compile for, is a Usage error
// naming it and saying why, with notes: the architecture probably meant
// ("did you mean sm_75?") and, for a readable spelling, those bekc knows.
std::expected<std::vector<Arch>, Error> parse_arch_list(const std::string& list);

// "sm_80,sm_90" — the canonical spelling, for keys, manifests and messages.
std::string arch_list_string(const std::vector<Arch>& archs);

// nvcc -gencode options: SASS for every arch plus PTX for the highest, so
// newer GPUs can still JIT the code.
std::vector<std::string> gencode_flags(const std::vector<Arch>& archs);

// Parses `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` output
// ("9.0\n8.6\n").
std::vector<Arch> parse_compute_caps(const std::string& output);

// Whether nvcc flags (the user's --cuda-flag values, with $NVCC_PREPEND_FLAGS
// and $NVCC_APPEND_FLAGS around them) choose GPU architectures themselves:
// nvcc's -arch/--gpu-architecture, -gencode/--generate-code or
// -code/--gpu-code, with its value attached after '=' or as the next word.
// Then `--arch auto` adds only the GPUs present, and nothing when there are
// none: the flags are the choice.
bool flags_name_gpu_archs(const std::vector<std::string>& nvcc_flags);

// `a` and `b` together, sorted and de-duplicated.
std::vector<Arch> arch_union(std::vector<Arch> a, const std::vector<Arch>& b);

}  // namespace bekc
