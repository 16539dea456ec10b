// Helpers shared by the scanner's unit tests: scan a string and look at the
// result as text, so that tests compare exact specs and exact diagnostics.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diag/diagnostic.hpp"
#include "scan/scanner.hpp"

namespace bekc::test {

inline ScanResult scan(std::string_view text, std::string_view file = "k.cu",
                       std::vector<ExplicitSpec> specs = {}) {
    ScanOptions options;
    options.cuda = is_cuda_source(file);
    options.explicit_specs = std::move(specs);
    return scan_source(text, file, options);
}

// "name(tok, tok) @line" per function, one per line.
inline std::string specs_of(const ScanResult& r) {
    std::string out;
    for (const auto& fn : r.functions) {
        out += fn.name + "(";
        for (size_t i = 0; i < fn.tokens.size(); ++i)
            out += (i ? ", " : "") + fn.tokens[i].canonical();
        out += ") @" + std::to_string(fn.annotation.line) + "\n";
    }
    return out;
}

// The specs found in `text`, or the rendered diagnostics when there are any.
inline std::string specs(std::string_view text, std::string_view file = "k.cu",
                         std::vector<ExplicitSpec> explicit_specs = {}) {
    ScanResult r = scan(text, file, std::move(explicit_specs));
    return r.diagnostics.empty() ? specs_of(r) : render_all(r.diagnostics);
}

// The rendered diagnostics of `text` (empty when it scans cleanly).
inline std::string errors(std::string_view text, std::string_view file = "k.cu",
                          std::vector<ExplicitSpec> explicit_specs = {}) {
    return render_all(scan(text, file, std::move(explicit_specs)).diagnostics);
}

// The spec of the one function in `text`, as canonical tokens joined by
// spaces, or the diagnostics.
inline std::string spec_of(std::string_view text, std::string_view file = "k.cu") {
    ScanResult r = scan(text, file);
    if (!r.diagnostics.empty()) return render_all(r.diagnostics);
    if (r.functions.size() != 1) return std::to_string(r.functions.size()) + " functions";
    std::string out;
    for (const auto& t : r.functions[0].canonical_tokens()) out += (out.empty() ? "" : " ") + t;
    return out;
}

inline ExplicitSpec function_option(std::string_view value) {
    std::string error;
    auto spec = parse_function_option(value, error);
    return spec ? *spec : ExplicitSpec{"<" + error + ">", {}, "--function"};
}

}  // namespace bekc::test
