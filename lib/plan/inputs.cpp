#include "plan/inputs.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace bekc {

std::vector<fs::path> expand_inputs(const std::vector<std::string>& inputs) {
    std::vector<fs::path> out;
    auto is_source = [](const fs::path& p) {
        return is_cuda_source(p.string()) || is_cpu_source(p.string());
    };
    for (const auto& in : inputs) {
        fs::path p(in);
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<fs::path> found;
            for (const auto& e : fs::directory_iterator(p, ec))
                if (e.is_regular_file() && is_source(e.path())) found.push_back(e.path());
            std::sort(found.begin(), found.end());
            if (found.empty())
                throw FatalError(in + ": error: directory has no .cu, .cpp, .cc or .cxx file",
                                 kExitUsage);
            out.insert(out.end(), found.begin(), found.end());
        } else if (fs::exists(p, ec)) {
            if (!is_source(p))
                throw FatalError(in + ": error: not a kernel source (expected .cu, .cpp, .cc or "
                                      ".cxx)",
                                 kExitUsage);
            out.push_back(p);
        } else {
            throw FatalError(in + ": error: no such file or directory", kExitUsage);
        }
    }
    return out;
}

ScannedInputs scan_inputs(const std::vector<fs::path>& paths,
                          const std::vector<ExplicitSpec>& explicit_specs, InputsAre kind) {
    ScannedInputs out;
    std::map<std::string, Location> defined;  // function -> first definition
    std::vector<std::string> found_explicit;
    for (const auto& path : paths) {
        std::string err;
        auto text = read_file(path, &err);
        if (!text) throw FatalError(path.string() + ": error: cannot read: " + err, kExitUsage);
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
                    f.text, where,
                    "function '" + fn.name + "' is exported by two inputs",
                    "it is also exported at " + it->second.file + ":" +
                        std::to_string(it->second.line) +
                        "; a module's target names must be unique: rename one"));
                continue;
            }
            f.functions.push_back(std::move(fn));
        }
        out.files.push_back(std::move(f));
    }
    for (const auto& spec : explicit_specs) {
        if (std::find(found_explicit.begin(), found_explicit.end(), spec.name) !=
            found_explicit.end())
            continue;
        Diagnostic d;
        d.where.file = spec.origin;
        d.message = "function '" + spec.name + "' is not defined in any input";
        d.fix = "bekc looks for 'void " + spec.name + "(...)' in each input, written out or made "
                "by a macro #defined in the same file";
        out.diagnostics.push_back(d);
    }
    return out;
}

std::vector<ExplicitSpec> read_functions_json(const fs::path& path) {
    std::string err;
    auto text = read_file(path, &err);
    if (!text) throw FatalError(path.string() + ": error: cannot read: " + err, kExitUsage);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(*text);
    } catch (const nlohmann::json::parse_error& e) {
        throw FatalError(path.string() + ": error: not valid JSON: " + e.what(), kExitUsage);
    }
    if (!j.is_object())
        throw FatalError(path.string() + ": error: expected an object {\"name\": [\"arg\", ...]}",
                         kExitUsage);
    std::vector<ExplicitSpec> out;
    for (auto& [name, tokens] : j.items()) {
        if (!is_cxx_identifier(name))
            throw FatalError(path.string() + ": error: '" + name +
                                 "' is not an ASCII C++ identifier",
                             kExitUsage);
        if (!tokens.is_array())
            throw FatalError(path.string() + ": error: the spec of '" + name +
                                 "' must be a list of tokens",
                             kExitUsage);
        ExplicitSpec spec{name, {}, path.string()};
        for (auto& t : tokens) {
            if (!t.is_string())
                throw FatalError(path.string() + ": error: the spec of '" + name +
                                     "' has a token that is not a string",
                                 kExitUsage);
            spec.tokens.push_back({t.get<std::string>(), 0});
        }
        out.push_back(std::move(spec));
    }
    return out;
}

}  // namespace bekc
