#include "driver/compile_log.hpp"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>
#include <vector>

namespace bekc {

namespace {

// g++/clang: "file:12:5: error:"; nvcc (EDG): "file(12): error:".
bool is_error_line(const std::string& line) {
    return line.find(": error:") != std::string::npos ||
           line.find("): error") != std::string::npos ||
           line.find(": fatal error:") != std::string::npos;
}

}  // namespace

std::string trim_compile_log(const std::string& log, int max_errors, int max_lines) {
    std::vector<std::string> lines;
    std::stringstream ss(log);
    for (std::string l; std::getline(ss, l);) lines.push_back(l);
    int errors = 0;
    size_t keep = lines.size();
    for (size_t i = 0; i < lines.size(); ++i) {
        if (is_error_line(lines[i]) && ++errors > max_errors) {
            keep = i;
            break;
        }
    }
    keep = std::min(keep, static_cast<size_t>(max_lines));
    std::string out;
    for (size_t i = 0; i < keep; ++i) out += lines[i] + "\n";
    if (keep < lines.size())
        out += "[bekc: " + std::to_string(lines.size() - keep) +
               " more lines of compiler output; rerun with -v to see them all]\n";
    return out;
}

std::string link_failure_notes(const std::string& output,
                               const std::vector<std::pair<std::string, std::string>>& objects) {
    std::string notes;
    for (const auto& [object, source] : objects)
        if (output.find(object) != std::string::npos)
            notes += "note: '" + object + "' is compiled from '" + source + "'\n";
    // Quoted mangled names: '_Z5shiftf' (nvlink), `_Z5shiftf' (ld).
    constexpr size_t kMaxNames = 8;
    std::set<std::string> seen;
    for (size_t at = output.find("_Z"); at != std::string::npos && seen.size() < kMaxNames;
         at = output.find("_Z", at + 2)) {
        if (at == 0 || (output[at - 1] != '\'' && output[at - 1] != '`' && output[at - 1] != '"'))
            continue;
        size_t end = at;
        while (end < output.size() &&
               (std::isalnum(static_cast<unsigned char>(output[end])) || output[end] == '_' ||
                output[end] == '.' || output[end] == '$'))
            ++end;
        std::string name = output.substr(at, end - at);
        if (!seen.insert(name).second) continue;
        int status = 0;
        char* plain = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
        if (status == 0 && plain) notes += "note: '" + name + "' is " + plain + "\n";
        std::free(plain);
    }
    return notes;
}

}  // namespace bekc
