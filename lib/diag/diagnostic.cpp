#include "diag/diagnostic.hpp"

#include <algorithm>

namespace bekc {

std::string_view line_of(std::string_view text, int line) {
    size_t pos = 0;
    for (int l = 1; l < line; ++l) {
        pos = text.find('\n', pos);
        if (pos == std::string_view::npos) return {};
        ++pos;
    }
    size_t end = text.find('\n', pos);
    std::string_view out = text.substr(pos, end == std::string_view::npos ? text.npos : end - pos);
    if (!out.empty() && out.back() == '\r') out.remove_suffix(1);
    return out;
}

Diagnostic make_error(std::string_view text, Location where, std::string message, std::string fix) {
    Diagnostic d;
    d.where = std::move(where);
    d.message = std::move(message);
    d.fix = std::move(fix);
    if (d.where.line > 0) d.source_line = std::string(line_of(text, d.where.line));
    return d;
}

std::string Diagnostic::render() const {
    std::string out;
    if (!where.file.empty()) {
        out += where.file;
        if (where.line > 0) {
            out += ':' + std::to_string(where.line);
            if (where.column > 0) out += ':' + std::to_string(where.column);
        }
        out += ": ";
    }
    out += severity == Severity::Error ? "error: " : "warning: ";
    out += message;
    out += '\n';
    if (!source_line.empty()) {
        out += "    " + source_line + '\n';
        if (where.column > 0) {
            // Keep tabs so the caret lines up under the same column in a terminal.
            std::string pad;
            for (int i = 0; i + 1 < where.column && i < static_cast<int>(source_line.size()); ++i)
                pad += source_line[i] == '\t' ? '\t' : ' ';
            out += "    " + pad + "^\n";
        }
    }
    if (!fix.empty()) out += "note: " + fix + '\n';
    return out;
}

bool has_errors(const std::vector<Diagnostic>& diags) {
    return std::any_of(diags.begin(), diags.end(),
                       [](const Diagnostic& d) { return d.severity == Severity::Error; });
}

std::string render_all(const std::vector<Diagnostic>& diags) {
    std::string out;
    for (const auto& d : diags) out += d.render();
    return out;
}

}  // namespace bekc
