#include "diag/diagnostic_text.hpp"

#include <array>
#include <charconv>
#include <optional>

namespace bekc {

namespace {

// The severities a diagnostic line names, longest first: "fatal error"
// before "error".
constexpr std::array<std::string_view, 4> kSeverities{"fatal error", "error", "warning", "note"};

// Programs that write "NAME: error: ..." about no file.
constexpr std::array<std::string_view, 11> kPrograms{"bekc",   "collect2", "ld",       "nvcc",
                                                     "nvlink", "ptxas",    "cicc",     "cc1plus",
                                                     "cc1",    "g++",      "fatbinary"};

std::optional<int> number(std::string_view s) {
    int value = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value <= 0)
        return std::nullopt;
    return value;
}

// "k.cpp:4:13", "k.cpp:4", "k.cu(12)", "k.cpp", "bekc".
Location location_of(std::string_view where) {
    Location loc;
    if (where.size() > 3 && where.back() == ')') {
        size_t open = where.rfind('(');
        if (auto line = open == std::string_view::npos
                            ? std::nullopt
                            : number(where.substr(open + 1, where.size() - open - 2))) {
            return {std::string(where.substr(0, open)), *line, 0};
        }
    }
    for (std::string_view program : kPrograms)
        if (where == program || where.ends_with("/" + std::string(program))) return loc;
    std::string_view rest = where;
    int fields[2] = {0, 0};
    int found = 0;
    for (; found < 2; ++found) {
        size_t colon = rest.rfind(':');
        auto n = colon == std::string_view::npos ? std::nullopt : number(rest.substr(colon + 1));
        if (!n) break;
        fields[found] = *n;
        rest = rest.substr(0, colon);
    }
    loc.file = std::string(rest);
    loc.line = found == 2 ? fields[1] : fields[0];
    loc.column = found == 2 ? fields[0] : 0;
    return loc;
}

struct Line {
    std::string_view severity;
    std::string_view where;  // empty: "error: ..." with no place
    std::string_view message;
};

// The diagnostic a line states, if any: "WHERE: SEVERITY: MESSAGE" or
// "SEVERITY: MESSAGE".
std::optional<Line> parse_line(std::string_view line) {
    for (std::string_view severity : kSeverities) {
        std::string head = std::string(severity) + ": ";
        if (line.starts_with(head)) return Line{severity, {}, line.substr(head.size())};
        size_t at = line.find(": " + head);
        if (at != std::string_view::npos && at > 0)
            return Line{severity, line.substr(0, at), line.substr(at + 2 + head.size())};
    }
    return std::nullopt;
}

}  // namespace

std::vector<TextDiagnostic> read_diagnostics(std::string_view text) {
    std::vector<TextDiagnostic> out;
    while (!text.empty()) {
        size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        if (line.ends_with('\r')) line.remove_suffix(1);
        auto parsed = parse_line(line);
        if (!parsed) continue;
        if (parsed->severity == "note" && !out.empty()) {
            std::string place = parsed->where.empty() ? "" : std::string(parsed->where) + ": ";
            out.back().notes.push_back(place + std::string(parsed->message));
            continue;
        }
        TextDiagnostic d;
        d.severity = std::string(parsed->severity);
        d.where = location_of(parsed->where);
        d.message = std::string(parsed->message);
        out.push_back(std::move(d));
    }
    return out;
}

}  // namespace bekc
