// `bekc build --compile-commands FILE`: compile_commands.json entries for the
// user's sources, with the include paths bekc adds, so clangd and other tools
// understand BE::Tensor and the CUDA headers in an editor.
#pragma once

#include <optional>
#include <vector>

#include "plan/compile_plan.hpp"
#include "plan/inputs.hpp"

namespace bekc {

struct CompileCommandsRequest {
    const std::vector<SourceFile>* files = nullptr;
    std::optional<Tool> nvcc;
    std::vector<Arch> archs;
    PlanFlags flags;
    fs::path runtime_include;
};

// Entries in clang's spelling (clangd does not understand nvcc's options):
// CUDA files get `-x cuda --cuda-path=... --cuda-gpu-arch=...`.
std::string render_compile_commands(const CompileCommandsRequest& request);

// Merges the entries into `file`: entries for other files are kept, entries
// for these sources replaced.
void write_compile_commands(const fs::path& file, const CompileCommandsRequest& request);

}  // namespace bekc
