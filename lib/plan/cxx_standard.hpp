// The C++ standards a compile may be asked for, and where a list of compiler
// flags asks for one. bekc's runtime headers (its own and brainevent's) need
// C++17: a build that asks for an older standard anywhere a compiler reads it
// is refused before anything compiles (prep/cxx_standard_check.hpp), instead
// of failing with hundreds of errors inside those headers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/include_flags.hpp"

namespace bekc {

// The oldest standard bekc's runtime headers compile under, as a year.
inline constexpr int kMinimumCxxStandard = 2017;

// The year of the C++ standard `name` names, in GCC's, clang's and nvcc's
// spellings: c++98, c++03, c++0x, c++11, c++1y, c++14, c++1z, c++17, c++2a,
// c++20, c++2b, c++23, c++2c, c++26, each also as gnu++ (c++1y: 2014). nullopt
// for a name that is no C++ standard (c11, foo).
std::optional<int> cxx_standard_year(std::string_view name);

// "C++14" for 2014, "C++03" for 2003.
std::string cxx_standard_title(int year);

// One place a list of flags asks for a standard.
struct StandardRequest {
    std::string value;  // the standard's name: "c++14"
    // The flags of the list that ask, as given: {"-Xcompiler", "-std=c++14"},
    // or those that name the response file holding the request.
    std::vector<std::string> spelled;
    // That response file, as its flag names it; empty when the list itself
    // asks.
    std::string file;
};

// Every standard `flags` asks a compiler for, in order: -std=V and --std=V
// (GCC, clang, nvcc), -std V and --std V (nvcc, GCC), GCC's -ansi (C++98 for
// C++), and the same inside what nvcc hands to the host compiler (-Xcompiler
// V, -Xcompiler=V, --compiler-options V and --compiler-options=V, whose value
// the host compiler gets split at commas and white space) and inside the
// response files `files` gives the words of (`@FILE`, nvcc's --options-file
// and -optf). A -std without a value asks for nothing.
std::vector<StandardRequest> standard_requests(const std::vector<std::string>& flags,
                                               const ResponseFileWords& files = {});

}  // namespace bekc
