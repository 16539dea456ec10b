// The manifest (SPEC §6, docs/manifest.md): what the Python loader reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/build_inputs.hpp"

namespace bekc {

// What the build made: the entry's key and its library's name and SHA-256.
struct ManifestOutput {
    std::string key, library_sha256;
};

std::string render_manifest(const BuildInputs& in, const ManifestOutput& out, bool cuda_graph);

}  // namespace bekc
