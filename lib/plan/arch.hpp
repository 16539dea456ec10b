// GPU architecture lists: `--arch sm_90,80,9.0,sm_90a`, `native`, `auto`.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// Parses an explicit, comma-separated list; sorted and de-duplicated.
// nullopt and `error` set for a malformed element.
std::optional<std::vector<Arch>> parse_arch_list(const std::string& list, std::string& error);

// "sm_80,sm_90" — the canonical spelling, for keys, manifests and messages.
std::string arch_list_string(const std::vector<Arch>& archs);

// nvcc -gencode options: SASS for every arch plus PTX for the highest, so
// newer GPUs can still JIT the code.
std::vector<std::string> gencode_flags(const std::vector<Arch>& archs);

// Parses `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` output
// ("9.0\n8.6\n").
std::vector<Arch> parse_compute_caps(const std::string& output);

}  // namespace bekc
