// Test helper: the message of the FatalError a call throws.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "util/error.hpp"

namespace bekc::test {

// The message of the FatalError `f` throws, checked to carry `exit_code`; or
// "<no error>" when it throws none.
template <typename F>
std::string fatal_message(F&& f, int exit_code = kExitUsage) {
    try {
        f();
    } catch (const FatalError& e) {
        CHECK(e.exit_code() == exit_code);
        return e.what();
    }
    return "<no error>";
}

}  // namespace bekc::test
