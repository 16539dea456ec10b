// Test helper: substring checks on generated text and messages.
#pragma once

#include <string>

namespace bekc::test {

inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace bekc::test
