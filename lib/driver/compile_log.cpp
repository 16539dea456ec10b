#include "driver/compile_log.hpp"

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

}  // namespace bekc
