// libFuzzer target for the scanner: the input is a kernel source file.
//
//   tests/fuzz/run_fuzz.sh [SECONDS]
//
// Each input is scanned as a .cu file and as a .cpp file, then again as .cu
// with explicit specs: one made from its first line (as if given to
// --function) and one per function the first scan found, both inferred and
// with the canonical spec written out. Beyond not crashing, leaking or hanging, every
// result must obey the rules the scanner promises its callers; a broken one
// aborts, so libFuzzer keeps the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "diag/diagnostic.hpp"
#include "scan/scanner.hpp"

namespace {

void check(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "fuzz_scanner: broken promise: %s\n", what);
    std::abort();
}

// What every caller relies on: exported names and attributes are identifiers
// (they are pasted into generated C++), the spec rules hold, and every
// diagnostic renders.
void check_result(const bekc::ScanResult& r, bool cuda) {
    for (const auto& fn : r.functions) {
        check(bekc::is_cxx_identifier(fn.name), "function name is an identifier");
        check(fn.num_rets() >= 1, "at least one ret");
        int streams = 0;
        std::set<std::string> attrs;
        for (const auto& t : fn.tokens) {
            if (t.kind == bekc::TokenKind::Stream) ++streams;
            if (t.kind != bekc::TokenKind::Attr) continue;
            check(bekc::is_cxx_identifier(t.attr_name), "attribute name is an identifier");
            check(attrs.insert(t.attr_name).second, "attribute names are distinct");
        }
        check(streams <= 1, "at most one stream");
        check(cuda || streams == 0, "no stream in a CPU build");
        check(fn.annotation.line >= 1, "a function has a line");
    }
    for (const auto& d : r.diagnostics) {
        std::string text = d.render();
        check(!text.empty() && text.back() == '\n', "a diagnostic renders as lines");
        check(d.where.line >= 0 && d.where.column >= 0, "locations are not negative");
    }
}

bekc::ScanResult scan(std::string_view text, bool cuda,
                      std::vector<bekc::ExplicitSpec> specs = {}) {
    bekc::ScanOptions options;
    options.cuda = cuda;
    options.explicit_specs = std::move(specs);
    bekc::ScanResult r = bekc::scan_source(text, cuda ? "fuzz.cu" : "fuzz.cpp", options);
    check_result(r, cuda);
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const bekc::ScanResult cu = scan(text, /*cuda=*/true);
    scan(text, /*cuda=*/false);

    // The first line as a --function value.
    std::string error;
    std::string_view first = text.substr(0, std::min(text.find('\n'), size_t{256}));
    if (auto spec = bekc::parse_function_option(first, error)) {
        scan(text, true, {*spec});
    } else {
        check(!error.empty(), "a rejected --function says why");
    }

    // The functions found, as explicit specs: inferred, then written out.
    std::vector<bekc::ExplicitSpec> inferred, written;
    for (const auto& fn : cu.functions) {
        if (inferred.size() == 16) break;
        inferred.push_back({fn.name, {}, "--function"});
        bekc::ExplicitSpec spec{fn.name, {}, "--function"};
        for (const auto& t : fn.canonical_tokens()) spec.tokens.push_back({t, 0});
        written.push_back(std::move(spec));
    }
    if (!inferred.empty()) {
        scan(text, true, inferred);
        scan(text, true, written);
    }
    return 0;
}
