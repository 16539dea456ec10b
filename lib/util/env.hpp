// Environment lookups behind a function, so tests can stub them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace bekc {

using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// The process environment; empty values count as unset.
EnvLookup system_env();

}  // namespace bekc
