// `bekc build --compile-commands FILE`: compile_commands.json entries for the
// user's sources, with the include paths bekc adds, so clangd and other tools
// understand BE::Tensor and the CUDA headers in an editor.
#pragma once

#include <cstdint>
#include <expected>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <vector>

#include "prep/build_inputs.hpp"
#include "util/error.hpp"

namespace bekc {

inline constexpr uint64_t kMaxCompileCommandsBytes = uint64_t{256} << 20;

// The entries of an existing compilation database `file`: an empty array when
// there is no such file or it is empty. Anything else that is not a regular
// file holding a JSON array of objects (nested at most kMaxJsonDepth deep)
// is a Usage error naming the file and why, so that a database bekc cannot
// read is never replaced and its entries lost.
std::expected<nlohmann::ordered_json, Error> read_compile_commands(const fs::path& file);

// Merges the entries into `file`: entries for other files are kept, entries
// for these sources replaced. A `file` read_compile_commands refuses is left
// unchanged, and its error returned.
std::expected<void, Error> write_compile_commands(const fs::path& file, const BuildInputs& in,
                                                  const fs::path& runtime_include);

}  // namespace bekc
