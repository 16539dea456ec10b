// Where something is in a source file. The scanner produces locations and
// diagnostics print them; both include this, so diag never reaches up into
// scan.
#pragma once

#include <string>

namespace bekc {

// Line and column are 1-based; 0 means unknown.
struct Location {
    std::string file;
    int line = 0;
    int column = 0;
};

}  // namespace bekc
