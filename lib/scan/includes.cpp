#include "scan/includes.hpp"

namespace bekc {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

size_t skip_spaces(std::string_view line, size_t i) {
    while (i < line.size() && is_space(line[i])) ++i;
    return i;
}

// The directive on one line, if the line is `# include <h>` or `# include "h"`.
bool parse_directive(std::string_view line, IncludeDirective& out) {
    size_t i = skip_spaces(line, 0);
    if (i >= line.size() || line[i] != '#') return false;
    size_t hash = i;
    i = skip_spaces(line, i + 1);
    constexpr std::string_view kWord = "include";
    if (line.substr(i, kWord.size()) != kWord) return false;
    i = skip_spaces(line, i + kWord.size());
    if (i >= line.size() || (line[i] != '"' && line[i] != '<')) return false;
    char close = line[i] == '"' ? '"' : '>';
    size_t end = line.find(close, i + 1);
    if (end == std::string_view::npos || end == i + 1) return false;
    out.header = std::string(line.substr(i + 1, end - i - 1));
    out.angled = close == '>';
    out.where.column = static_cast<int>(hash) + 1;
    return true;
}

}  // namespace

std::vector<IncludeDirective> find_includes(std::string_view text, std::string_view file) {
    std::vector<IncludeDirective> out;
    bool in_comment = false;
    int line_no = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        std::string_view line =
            text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        ++line_no;
        // Block comments: a line that starts inside one is not a directive; the
        // state carries past every "/*" that the line leaves open.
        bool starts_in_comment = in_comment;
        for (size_t i = 0; i + 1 < line.size(); ++i) {
            if (!in_comment && line[i] == '/' && line[i + 1] == '/') break;
            if (!in_comment && line[i] == '/' && line[i + 1] == '*') {
                in_comment = true;
                ++i;
            } else if (in_comment && line[i] == '*' && line[i + 1] == '/') {
                in_comment = false;
                ++i;
            }
        }
        IncludeDirective d;
        if (!starts_in_comment && parse_directive(line, d)) {
            d.where.file = std::string(file);
            d.where.line = line_no;
            out.push_back(std::move(d));
        }
        if (nl == std::string_view::npos) break;
        pos = nl + 1;
    }
    return out;
}

}  // namespace bekc
