// The driver's one way onto the fatal path (CONTRIBUTING.md, "Errors"): an
// Error it cannot recover from becomes a FatalError, which main() catches.
#pragma once

#include <expected>
#include <string_view>
#include <utility>

#include "run/interrupt.hpp"
#include "util/error.hpp"

namespace bekc {

[[noreturn]] inline void fatal(Error error) {
    throw FatalError(std::move(error));
}

// The value, or the error thrown as a FatalError.
template <class T>
T or_fatal(std::expected<T, Error> result) {
    if (!result) fatal(std::move(result.error()));
    return std::move(*result);
}
inline void or_fatal(std::expected<void, Error> result) {
    if (!result) fatal(std::move(result.error()));
}

// The same, with what the driver was doing in front of the message
// ("--depfile: cannot write ...").
template <class T>
T or_fatal(std::expected<T, Error> result, std::string_view context) {
    if (!result) fatal(std::move(result.error().within(context)));
    return std::move(*result);
}
inline void or_fatal(std::expected<void, Error> result, std::string_view context) {
    if (!result) fatal(std::move(result.error().within(context)));
}

// Unwinds the build when a signal has arrived (run/interrupt.hpp).
inline void throw_if_interrupted() {
    or_fatal(check_interrupted());
}

}  // namespace bekc
