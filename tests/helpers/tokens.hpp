// Test helper: lexer tokens as one string, for comparing with what a test expects.
#pragma once

#include <string>
#include <vector>

#include "scan/lexer.hpp"

namespace bekc::test {

// The tokens' texts, separated by single spaces.
inline std::string texts(const std::vector<LexToken>& toks) {
    std::string out;
    for (const auto& t : toks) {
        if (!out.empty()) out += ' ';
        out += t.text();
    }
    return out;
}

}  // namespace bekc::test
