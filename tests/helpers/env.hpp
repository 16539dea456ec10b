// Test helper: an EnvLookup holding exactly the given variables.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/env.hpp"

namespace bekc::test {

// Like system_env(), an empty value counts as unset.
inline EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
        auto it = vars.find(std::string(name));
        if (it == vars.end() || it->second.empty()) return std::nullopt;
        return it->second;
    };
}

}  // namespace bekc::test
