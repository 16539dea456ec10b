// The manifest (SPEC §6, docs/manifest.md): what the Python loader reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/compile_plan.hpp"
#include "plan/inputs.hpp"

namespace bekc {

struct ManifestInput {
    std::string name, target_prefix, key, library_file, library_sha256;
    std::optional<Tool> nvcc;
    std::string nvcc_version;
    Tool cxx;
    std::string cxx_version;
    std::vector<Arch> archs;
    PlanFlags flags;
    const std::vector<SourceFile>* files = nullptr;
};

// The manifest text; `cuda_graph` picks which handler symbols it names.
std::string render_manifest(const ManifestInput& in, bool cuda_graph);

}  // namespace bekc
