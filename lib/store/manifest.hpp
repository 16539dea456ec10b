// The manifest (SPEC §6, docs/manifest.md): what the Python loader reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/arch.hpp"
#include "plan/flags.hpp"
#include "scan/spec.hpp"

namespace bekc {

// What the manifest says about the build, as plain values
// (prep/build_inputs.hpp, manifest_inputs, fills them from a build).
struct ManifestTool {
    std::string path, version;
};
struct ManifestSource {
    bool cuda = false;
    std::vector<FunctionSpec> functions;
};
struct ManifestInputs {
    std::string name, target_prefix;
    std::string library;  // the library's file name
    std::vector<ManifestSource> sources;
    std::optional<ManifestTool> nvcc;
    ManifestTool cxx;
    std::vector<Arch> archs;
    PlanFlags flags;
};

// What the build made: the entry's key and its library's name and SHA-256.
struct ManifestOutput {
    std::string key, library_sha256;
};

std::string render_manifest(const ManifestInputs& in, const ManifestOutput& out, bool cuda_graph);

}  // namespace bekc
