// Files compiled into the binary: templates/ and runtime/include/.
#pragma once

#include <string_view>
#include <vector>

namespace bekc {

struct EmbeddedFile {
    std::string_view path;  // relative to the source root, e.g. "templates/handler.cpp.in"
    std::string_view data;
};

const std::vector<EmbeddedFile>& embedded_files();

// SHA-256 (hex) over each file's path and SHA-256, in order; computed when
// bekc is built. Part of every cache key.
std::string_view embedded_files_hash();

// The contents of an embedded file; throws InternalError when there is none.
std::string_view embedded(std::string_view path);

}  // namespace bekc
