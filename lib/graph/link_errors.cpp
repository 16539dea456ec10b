#include "graph/link_errors.hpp"

#include <algorithm>
#include <string_view>

namespace bekc {

namespace {

// "vector_add(BE::Tensor, long)" -> "vector_add"; "ns::f(int)" -> "ns::f";
// an extern "C" name stays as it is.
std::string function_name(const std::string& symbol) {
    std::string name = symbol.substr(0, symbol.find('('));
    while (!name.empty() && name.back() == ' ') name.pop_back();
    return name;
}

// Undefined symbols of one library (nullptr: of none bekc knows), in the
// order the linker named them.
struct SymbolGroup {
    const KnownLibrary* library;
    std::vector<std::string> symbols;
};

std::vector<SymbolGroup> group_by_library(const std::vector<std::string>& symbols) {
    std::vector<SymbolGroup> groups;
    std::vector<std::string> unknown;
    for (const auto& symbol : symbols) {
        const KnownLibrary* library = library_defining(symbol);
        if (!library) {
            unknown.push_back(symbol);
            continue;
        }
        // NCCL and OpenMP are known by several prefixes.
        auto same = std::find_if(groups.begin(), groups.end(), [&](const SymbolGroup& g) {
            return g.library->name == library->name && g.library->link == library->link &&
                   g.library->nvcc_link == library->nvcc_link;
        });
        if (same == groups.end())
            groups.push_back({library, {symbol}});
        else
            same->symbols.push_back(symbol);
    }
    if (!unknown.empty()) groups.push_back({nullptr, std::move(unknown)});
    return groups;
}

// A link flag in the CLI's terms and in Python's.
std::string link_flag(std::string_view flag) {
    std::string f(flag);
    return "--ldflag=" + f + " (extra_ldflags=[\"" + f + "\"] from Python)";
}

std::string link_note(const KnownLibrary& library, bool nvcc_links) {
    std::string_view flag =
        nvcc_links && !library.nvcc_link.empty() ? library.nvcc_link : library.link;
    std::string note = "link " + std::string(library.name) + " with " + link_flag(flag);
    // nvcc searches its toolkit's library directory; the host compiler does not.
    if (library.in_toolkit && !nvcc_links)
        note += ", and name the CUDA toolkit's library directory with --ldflag=-L<toolkit>/lib64";
    if (!library.note.empty()) note += "; " + std::string(library.note);
    return note;
}

std::string unknown_note(const std::vector<std::string>& symbols) {
    bool one = symbols.size() == 1;
    return "define " + (one ? symbols.front() : std::string("each")) +
           " in a source of the module, or link the library that defines " + (one ? "it" : "them") +
           " with " + link_flag("-lNAME");
}

Error library_symbols_error(const std::vector<std::string>& symbols, const std::string& library,
                            bool nvcc_links) {
    std::vector<SymbolGroup> groups = group_by_library(symbols);
    std::string listed;
    for (const auto& g : groups)
        listed +=
            (listed.empty() ? "" : "; ") + list_names(g.symbols) + " (" +
            (g.library ? std::string(g.library->name) : "defined in no source of the module") + ")";
    Error e =
        Error::make(ErrorKind::Source, "linking " + library + " failed: undefined " +
                                           (symbols.size() == 1 ? "symbol " : "symbols ") + listed);
    for (const auto& g : groups)
        e.note(g.library ? link_note(*g.library, nvcc_links) : unknown_note(g.symbols));
    return e;
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

std::optional<UndefinedSymbolsReport> explain_undefined_symbols(
    const std::string& linker_output, const std::vector<SourceFile>& files,
    const std::string& library, bool nvcc_links, bool verbose) {
    UndefinedExports undefined = undefined_exports(linker_output, files);
    if (undefined.errors.empty() && undefined.others.empty()) return std::nullopt;
    UndefinedSymbolsReport out{
        render_all(undefined.errors) + (verbose ? "" : lines_besides_undefined(linker_output)),
        Error()};
    if (undefined.others.empty()) {
        out.error =
            Error::make(ErrorKind::Source,
                        "linking " + library + " failed: an exported function is never defined");
        return out;
    }
    out.error = library_symbols_error(undefined.others, library, nvcc_links);
    if (!verbose) out.error.note("rerun with -v to see the linker's own output");
    return out;
}

}  // namespace bekc
