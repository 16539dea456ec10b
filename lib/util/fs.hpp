// Small filesystem helpers with the error handling bekc wants everywhere.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace bekc {

namespace fs = std::filesystem;

// Reads a whole file; nullopt (and `error` set) when it cannot be read.
std::optional<std::string> read_file(const fs::path& path, std::string* error = nullptr);

// The absolute path with symbolic links resolved as far as it exists, for
// keys that must not depend on how a directory was spelled; the plain
// absolute, normalised path when that fails.
fs::path resolved_path(const fs::path& path);

// Writes through a temporary file in the same directory and renames it into
// place, so readers see the old or the new content, never a mix.
void write_file_atomic(const fs::path& path, std::string_view content);

}  // namespace bekc
