#include "prep/inputs.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "scan/symbols.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc {

std::expected<std::vector<fs::path>, Error> expand_inputs(const std::vector<std::string>& inputs) {
    std::vector<fs::path> out;
    auto is_source = [](const fs::path& p) {
        return is_cuda_source(p.string()) || is_cpu_source(p.string());
    };
    for (const auto& in : inputs) {
        fs::path p(in);
        std::error_code ec;
        const fs::file_status st = fs::status(p, ec);  // through symbolic links
        if (fs::is_directory(st)) {
            std::vector<fs::path> found;
            for (const auto& e : fs::directory_iterator(p, ec))
                if (e.is_regular_file() && is_source(e.path())) found.push_back(e.path());
            std::sort(found.begin(), found.end());
            if (found.empty())
                return std::unexpected(Error::at(ErrorKind::Usage, in, 0,
                                                 "directory has no .cu, .cpp, .cc or .cxx file"));
            out.insert(out.end(), found.begin(), found.end());
        } else if (fs::is_regular_file(st)) {
            if (!is_source(p))
                return std::unexpected(Error::at(ErrorKind::Usage, in, 0,
                                                 "not a kernel source (expected .cu, .cpp, .cc or "
                                                 ".cxx)"));
            out.push_back(p);
        } else if (st.type() == fs::file_type::not_found) {
            return std::unexpected(Error::at(ErrorKind::Usage, in, 0, "no such file or directory"));
        } else if (st.type() == fs::file_type::none || st.type() == fs::file_type::unknown) {
            return std::unexpected(
                Error::at(ErrorKind::Usage, in, 0, "cannot access: " + ec.message()));
        } else {
            // Reading a FIFO would wait for a writer, /dev/zero would never end.
            return std::unexpected(Error::at(ErrorKind::Usage, in, 0,
                                             "not a regular file (it is " + kind_of(st.type()) +
                                                 "); give a kernel source file or a directory"));
        }
    }
    return out;
}

std::expected<void, Error> check_name_lengths(const std::string& name, std::string_view name_origin,
                                              const std::string& target_prefix) {
    auto check = [](const std::string& value, const std::string& what,
                    const std::string& why) -> std::expected<void, Error> {
        if (value.size() <= kMaxModuleNameLength) return {};
        return fail(ErrorKind::Usage, what + " '" + value.substr(0, 24) + "...' is " +
                                          std::to_string(value.size()) +
                                          " characters long; the limit is " +
                                          std::to_string(kMaxModuleNameLength) + " (" + why + ")");
    };
    const std::string origin(name_origin);
    if (auto ok = check(name, origin == "--name" ? origin : "module name (" + origin + ")",
                        origin == "--name" ? "it names the library, libNAME.so"
                                           : "it names the library, libNAME.so; choose a shorter "
                                             "one with --name");
        !ok)
        return ok;
    return check(target_prefix, "--target-prefix", "it starts every target name");
}

size_t json_nesting_excess_line(std::string_view text, int max_depth) {
    int depth = 0;
    size_t line = 1;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
        } else if (in_string) {
            if (c == '\\')
                ++i;  // the escaped character cannot end the string
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) return line;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return 0;
}

std::expected<nlohmann::ordered_json, Error> parse_user_json(std::string_view text,
                                                             const fs::path& path) {
    if (size_t line = json_nesting_excess_line(text))
        return std::unexpected(
            Error::at(ErrorKind::Usage, path.string(), static_cast<int>(line),
                      "JSON nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels"));
    // Ordered, so that what is read keeps the order the file gives it.
    auto j = parse_json<nlohmann::ordered_json>(text);
    if (!j)
        return std::unexpected(
            Error::at(ErrorKind::Usage, path.string(), 0, "not valid JSON: " + j.error()));
    return std::move(*j);
}

namespace {

// Explicit specs name each function once; a second spec for the same name
// (from --function and --functions, say) is an error, and only the first is used.
std::vector<ExplicitSpec> unique_specs(const std::vector<ExplicitSpec>& specs,
                                       std::vector<Diagnostic>& diagnostics) {
    std::vector<ExplicitSpec> out;
    std::map<std::string, std::string> origin;  // function -> where its first spec is
    for (const auto& spec : specs) {
        auto [it, fresh] = origin.emplace(spec.name, spec.origin);
        if (fresh) {
            out.push_back(spec);
            continue;
        }
        Diagnostic d;
        d.where.file = spec.origin;
        d.message = "function '" + spec.name + "' is given two explicit specs";
        d.fix = "the other one is from " + it->second + "; keep one of them";
        diagnostics.push_back(d);
    }
    return out;
}

// `f` in one input and `f_nograph` in another would both define the handler
// symbol bekc_ffi_f_nograph (the second's handler, and the first's variant
// without the command-buffer trait) and fail at link time, naming generated
// objects: report it at the second's annotation instead. Within one input the
// wrapper generator reports the same clash (codegen/wrapper.cpp).
void check_nograph_clashes(ScannedInputs& out, const std::map<std::string, Location>& defined) {
    // The variant symbol of every exported function, and that function.
    std::map<std::string, const std::pair<const std::string, Location>*> variants;
    for (const auto& d : defined) variants.emplace(handler_symbol_nograph(d.first), &d);
    for (auto& file : out.files) {
        auto& fns = file.functions;
        for (auto it = fns.begin(); it != fns.end();) {
            const std::string symbol = handler_symbol(it->name);
            auto v = variants.find(symbol);
            if (v == variants.end() || v->second->second.file == it->annotation.file) {
                ++it;
                continue;
            }
            const std::string& base = v->second->first;
            const Location& base_at = v->second->second;
            out.diagnostics.push_back(
                make_error(file.text, it->annotation,
                           "exported functions '" + base + "' and '" + it->name +
                               "' would both define the handler symbol '" + symbol + "'",
                           "'" + base + "' is exported at " + base_at.file + ":" +
                               std::to_string(base_at.line) +
                               ", and bekc names its variant without the command-buffer trait '" +
                               symbol + "'; rename '" + it->name + "'"));
            it = fns.erase(it);
        }
    }
}

}  // namespace

std::expected<ScannedInputs, Error> scan_inputs(const std::vector<fs::path>& paths,
                                                const std::vector<ExplicitSpec>& all_specs,
                                                InputsAre kind) {
    ScannedInputs out;
    const std::vector<ExplicitSpec> explicit_specs = unique_specs(all_specs, out.diagnostics);
    std::map<std::string, Location> defined;  // function -> first definition
    std::vector<std::string> found_explicit;
    for (const auto& path : paths) {
        auto text = read_file(path, ReadOptions{.max_bytes = kMaxSourceBytes});
        if (!text) return fail(ErrorKind::Usage, text.error().message);
        SourceFile f{path, is_cuda_source(path.string()), std::move(*text), {}};
        ScanOptions opts{f.cuda, explicit_specs};
        ScanResult r = scan_source(f.text, path.string(), opts);
        out.diagnostics.insert(out.diagnostics.end(), r.diagnostics.begin(), r.diagnostics.end());
        found_explicit.insert(found_explicit.end(), r.explicit_found.begin(),
                              r.explicit_found.end());
        for (auto& fn : r.functions) {
            auto [it, fresh] = defined.emplace(fn.name, fn.annotation);
            if (!fresh && kind == InputsAre::OneModule) {
                Location where = fn.annotation;
                out.diagnostics.push_back(make_error(
                    f.text, where, "function '" + fn.name + "' is exported by two inputs",
                    "it is also exported at " + it->second.file + ":" +
                        std::to_string(it->second.line) +
                        "; a module's target names must be unique: rename one"));
                continue;
            }
            f.functions.push_back(std::move(fn));
        }
        out.files.push_back(std::move(f));
    }
    if (kind == InputsAre::OneModule) check_nograph_clashes(out, defined);
    for (const auto& spec : explicit_specs) {
        if (std::find(found_explicit.begin(), found_explicit.end(), spec.name) !=
            found_explicit.end())
            continue;
        Diagnostic d;
        d.where.file = spec.origin;
        d.message = "function '" + spec.name + "' is not defined in any input";
        d.fix = "bekc looks for 'void " + spec.name +
                "(...)' in each input, written out or made "
                "by a macro #defined in the same file";
        out.diagnostics.push_back(d);
    }
    return out;
}

namespace {

// One entry of a --functions file: `name` and its list of tokens.
std::expected<ExplicitSpec, Error> spec_of(const std::string& name,
                                           const nlohmann::ordered_json& tokens,
                                           const fs::path& path, const std::string& shape) {
    auto usage = [&](std::string message) {
        return std::unexpected(Error::at(ErrorKind::Usage, path.string(), 0, std::move(message)));
    };
    if (std::string why = identifier_problem(name); !why.empty())
        return usage("function name '" + name + "' " + why +
                     " (names are emitted into generated code)");
    if (!tokens.is_array())
        return usage("the spec of '" + name + "' is not a list of tokens" + shape +
                     " ([] infers the spec from the signature)");
    ExplicitSpec spec{name, {}, path.string()};
    for (const auto& t : tokens) {
        if (!t.is_string()) {
            std::string shown = dump_json(t);
            if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
            return usage("the spec of '" + name + "' has a token that is not a string: " + shown +
                         shape);
        }
        spec.tokens.push_back({t.get<std::string>(), 0});
    }
    return spec;
}

}  // namespace

std::expected<std::vector<ExplicitSpec>, Error> read_functions_json(const fs::path& path) {
    const std::string shape = "; expected {\"name\": [\"arg\", \"ret\", ...], ...}";
    auto text = read_file(path, ReadOptions{.max_bytes = kMaxOptionFileBytes});
    if (!text) return fail(ErrorKind::Usage, "--functions: " + text.error().message);
    auto j = parse_user_json(*text, path);
    if (!j) return std::unexpected(j.error());
    auto usage = [&](std::string message) {
        return std::unexpected(Error::at(ErrorKind::Usage, path.string(), 0, std::move(message)));
    };
    if (!j->is_object()) return usage("not a JSON object" + shape);
    if (j->empty()) return usage("names no function" + shape);
    std::vector<ExplicitSpec> out;
    for (const auto& [name, tokens] : j->items()) {
        auto spec = spec_of(name, tokens, path, shape);
        if (!spec) return std::unexpected(spec.error());
        out.push_back(std::move(*spec));
    }
    return out;
}

std::expected<std::vector<ExplicitSpec>, Error> collect_explicit_specs(
    const std::vector<std::string>& functions, const std::string& functions_json) {
    std::vector<ExplicitSpec> specs;
    for (const auto& f : functions) {
        std::string err;
        auto spec = parse_function_option(f, err);
        if (!spec) return fail(ErrorKind::Usage, err);
        specs.push_back(std::move(*spec));
    }
    if (!functions_json.empty()) {
        auto more = read_functions_json(functions_json);
        if (!more) return more;
        specs.insert(specs.end(), more->begin(), more->end());
    }
    return specs;
}

}  // namespace bekc
