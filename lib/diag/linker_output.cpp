#include "diag/linker_output.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace bekc {

namespace {

// How each linker quotes an undefined symbol: the text between `open` and
// `close` on one line of its output.
struct UndefinedForm {
    std::string_view open;
    std::string_view close;  // empty: to the end of the line
};

constexpr UndefinedForm kUndefinedForms[] = {
    {"undefined reference to `", "'"},  // GNU ld
    {"undefined reference to '", "'"},  // GNU ld, newer releases
    {"undefined symbol: ", ""},         // lld, gold
};

}  // namespace

std::string demangle(const std::string& name) {
    if (name.rfind("_Z", 0) != 0) return name;
    int status = 0;
    char* plain = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    std::string out = status == 0 && plain ? plain : name;
    std::free(plain);
    return out;
}

std::vector<std::string> undefined_symbols(const std::string& linker_output) {
    std::vector<std::string> out;
    std::stringstream ss(linker_output);
    for (std::string line; std::getline(ss, line);) {
        for (const auto& form : kUndefinedForms) {
            size_t at = line.find(form.open);
            if (at == std::string::npos) continue;
            size_t from = at + form.open.size();
            size_t to = form.close.empty() ? line.size() : line.find(form.close, from);
            if (to == std::string::npos) continue;
            std::string symbol = demangle(line.substr(from, to - from));
            while (!symbol.empty() && (symbol.back() == ' ' || symbol.back() == '\r'))
                symbol.pop_back();
            if (!symbol.empty() && std::find(out.begin(), out.end(), symbol) == out.end())
                out.push_back(symbol);
            break;
        }
    }
    return out;
}

}  // namespace bekc
