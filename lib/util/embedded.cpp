#include "util/embedded.hpp"

#include <string>

#include "util/error.hpp"

namespace bekc {

std::string_view embedded(std::string_view path) {
    for (const auto& f : embedded_files())
        if (f.path == path) return f.data;
    throw InternalError("no embedded file " + std::string(path));
}

}  // namespace bekc
