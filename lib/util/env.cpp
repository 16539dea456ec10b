#include "util/env.hpp"

#include <cstdlib>

namespace bekc {

EnvLookup system_env() {
    return [](std::string_view name) -> std::optional<std::string> {
        const char* v = std::getenv(std::string(name).c_str());
        if (!v || !*v) return std::nullopt;
        return std::string(v);
    };
}

}  // namespace bekc
