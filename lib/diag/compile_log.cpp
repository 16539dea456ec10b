#include "diag/compile_log.hpp"

#include "diag/linker_output.hpp"
#include "util/text.hpp"

#include <cctype>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

namespace bekc {

namespace {

// g++/clang: "file:12:5: error:"; nvcc (EDG): "file(12): error:".
bool is_error_line(const std::string& line) {
    return line.find(": error:") != std::string::npos ||
           line.find("): error") != std::string::npos ||
           line.find(": fatal error:") != std::string::npos;
}

// nvcc's own fatal errors ("fatal   : Could not open input file X.cpp1.ii").
constexpr std::string_view kNvccFatal = "fatal   : ";

// "In file included from W:6:" or "                 from W:6:", where W is a
// wrapper bekc wrote ("0_kernels.bekc.cu").
bool names_wrapper(const std::string& line) {
    std::string_view l = trim(line);
    if (l.rfind("In file included from ", 0) != 0 && l.rfind("from ", 0) != 0) return false;
    return l.find(".bekc.") != std::string_view::npos;
}

bool is_include_context(const std::string& line) {
    std::string_view l = trim(line);
    return l.rfind("In file included from ", 0) == 0 || l.rfind("from ", 0) == 0;
}

// The header a "not found" error names: gcc/clang's "fatal error: X: No such
// file or directory", nvcc's (EDG) 'cannot open source file "X"'.
std::string missing_header(const std::string& line) {
    constexpr std::string_view kGcc = "fatal error: ", kGccEnd = ": No such file or directory";
    constexpr std::string_view kEdg = "cannot open source file \"";
    if (size_t at = line.find(kGcc), end = line.rfind(kGccEnd);
        at != std::string::npos && end != std::string::npos && end > at + kGcc.size())
        return line.substr(at + kGcc.size(), end - at - kGcc.size());
    if (size_t at = line.find(kEdg); at != std::string::npos) {
        size_t from = at + kEdg.size(), to = line.find('"', from);
        if (to != std::string::npos) return line.substr(from, to - from);
    }
    return {};
}

}  // namespace

std::string tidy_compile_log(const std::string& log) {
    std::vector<std::string> lines;
    std::stringstream ss(log);
    for (std::string l; std::getline(ss, l);)
        if (!names_wrapper(l)) lines.push_back(l);
    // Blocks: a diagnostic with the include context before it and the lines
    // after it up to the next one.
    std::vector<std::string> blocks;
    bool any_error = false;
    for (size_t i = 0; i < lines.size(); ++i) {
        bool after_context = i > 0 && is_include_context(lines[i - 1]);
        bool starts = is_include_context(lines[i]) ? !after_context
                                                   : (is_error_line(lines[i]) && !after_context) ||
                                                         lines[i].rfind(kNvccFatal, 0) == 0;
        if (starts || blocks.empty()) blocks.emplace_back();
        any_error |= is_error_line(lines[i]);
        blocks.back() += lines[i] + "\n";
    }
    std::string out;
    std::set<std::string> seen, headers;
    for (const auto& b : blocks) {
        if (!seen.insert(b).second) continue;
        // nvcc's next stage finds no output of the one that failed.
        if (any_error && b.rfind(kNvccFatal, 0) == 0) continue;
        out += b;
        std::stringstream bs(b);
        for (std::string l; std::getline(bs, l);)
            if (std::string h = missing_header(l); !h.empty()) headers.insert(h);
    }
    for (const auto& h : headers)
        out += "note: '" + h +
               "' is not on the include path: add the directory that holds it with -I DIR "
               "(extra_include_paths=[DIR] from Python)\n";
    return out;
}

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
        std::string plain = demangle(name);
        if (plain != name) notes += "note: '" + name + "' is " + plain + "\n";
    }
    return notes;
}

}  // namespace bekc
