#include "plan/tool.hpp"

namespace bekc {

std::string Tool::identity() const {
    return path.string() + "|" + canonical.string() + "|" + std::to_string(size) + "|" +
           std::to_string(mtime_ns);
}

}  // namespace bekc
