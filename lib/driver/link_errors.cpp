#include "driver/link_errors.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace bekc {

namespace {

// "vector_add(BE::Tensor, long)" -> "vector_add"; "ns::f(int)" -> "ns::f";
// an extern "C" name stays as it is.
std::string function_name(const std::string& symbol) {
    std::string name = symbol.substr(0, symbol.find('('));
    while (!name.empty() && name.back() == ' ') name.pop_back();
    return name;
}

}  // namespace

UndefinedExports undefined_exports(const std::string& linker_output,
                                   const std::vector<SourceFile>& files) {
    UndefinedExports out;
    for (const auto& symbol : undefined_symbols(linker_output)) {
        const std::string name = function_name(symbol);
        bool found = false;
        for (const auto& file : files) {
            for (const auto& fn : file.functions) {
                if (fn.name != name) continue;
                found = true;
                Location where = fn.annotation;
                if (where.file.empty()) where.file = file.path.string();
                out.errors.push_back(make_error(
                    file.text, where, "'" + name + "' is declared here but never defined",
                    "define " + symbol +
                        " in this file, or in a source or library linked into the module"));
            }
        }
        if (!found) out.others.push_back(symbol);
    }
    return out;
}

}  // namespace bekc
