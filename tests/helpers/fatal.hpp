// Test helper: the message of the error a call fails with.
#pragma once

#include <catch2/catch.hpp>
#include <expected>
#include <string>
#include <type_traits>

#include "util/error.hpp"

namespace bekc::test {

template <typename T>
struct is_expected : std::false_type {};
template <typename T>
struct is_expected<std::expected<T, Error>> : std::true_type {};

// The error `f` fails with, as main() would print it, checked to carry
// `exit_code`; or "<no error>" when it succeeds. `f` either returns an
// std::expected<T, Error> (a lower layer) or throws FatalError (the driver).
template <typename F>
std::string fatal_message(F&& f, int exit_code = kExitUsage) {
    try {
        if constexpr (is_expected<std::invoke_result_t<F>>::value) {
            auto result = f();
            if (result) return "<no error>";
            CHECK(result.error().exit_code() == exit_code);
            return result.error().render();
        } else {
            f();
        }
    } catch (const FatalError& e) {
        CHECK(e.exit_code() == exit_code);
        return e.what();
    }
    return "<no error>";
}

}  // namespace bekc::test
