#include "driver/package_plan.hpp"

#include <functional>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "driver/inputs.hpp"
#include "scan/python_loads.hpp"
#include "scan/python_path.hpp"
#include "scan/scanner.hpp"
#include "scan/spec.hpp"
#include "scan/symbols.hpp"

namespace bekc {

namespace {

bool is_package_kernel(const fs::path& p) {
    return is_cuda_source(p.string()) || is_cpu_source(p.string());
}

bool is_package_python(const fs::path& p) {
    std::string n = p.filename().string();
    return p.extension() == ".py" && !(n.size() > 8 && n.substr(n.size() - 8) == "_test.py");
}

// The keyword arguments that leave the library and its cache key unchanged:
// a call that passes only these (and `name`) is one the prebuild reproduces.
bool key_neutral(const std::string& keyword) {
    static const std::set<std::string> kNeutral = {
        "name", "allow_cuda_graph", "verbose", "auto_register", "replace", "force_rebuild"};
    return kNeutral.count(keyword) > 0;
}

// Why `bekc build --name` would refuse `name`, empty when it takes it.
std::string module_name_refusal(const std::string& name) {
    if (std::string problem = module_name_problem(name); !problem.empty()) return problem;
    if (name.size() > kMaxModuleNameLength)
        return "is longer than " + std::to_string(kMaxModuleNameLength) + " characters";
    return {};
}

bool valid_module_name(const std::string& name) {
    return module_name_refusal(name).empty();
}

// "a", "a and b", "a, b and c".
std::string spoken_list(const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i)
        out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
    return out;
}

// What in a load a prebuild cannot reproduce (nothing when it can), given the
// name it resolves to (empty when its path is computed).
std::vector<std::string> irreproducible(const KernelLoad& load, const std::string& name) {
    std::vector<std::string> why;
    const bool has_name = std::count(load.keywords.begin(), load.keywords.end(), "name") > 0;
    if (has_name && load.name.empty()) why.push_back("a computed name");
    if (load.positional > 1) why.push_back("a functions argument");
    for (const auto& k : load.keywords)
        if (!key_neutral(k)) why.push_back(k);
    if (why.empty() && !name.empty() && !valid_module_name(name))
        why.push_back("the name '" + name + "', which " + module_name_refusal(name));
    return why;
}

std::string relative_text(const fs::path& p, const fs::path& root) {
    return p.lexically_relative(root).generic_string();
}

}  // namespace

std::string check_module_name(const fs::path& relative) {
    fs::path no_ext = relative;
    no_ext.replace_extension();
    std::string out;
    for (const auto& part : no_ext) {
        std::string s = part.string();
        s.erase(0, s.find_first_not_of('_'));
        for (char& c : s)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_') ||
                static_cast<unsigned char>(c) >= 0x80)
                c = '_';
        if (!s.empty()) out += (out.empty() ? "" : "_") + s;
    }
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out.front()))) out = "m_" + out;
    return out;
}

namespace {

// What the package's Python files say of its kernel files.
struct PackageLoads {
    std::map<fs::path, std::map<std::string, std::string>> loaded;  // file -> name -> site
    std::map<fs::path, std::vector<std::string>> refused;           // file -> "site: why" lines
};

// A load whose path bekc cannot evaluate: the file it names is not known; a
// literal of the path that is a kernel file's name points at the candidates
// below the .py.
void refuse_computed_path(const KernelLoad& load, const std::string& site, const fs::path& py,
                          const std::vector<fs::path>& kernels, PackageLoads& out) {
    std::vector<std::string> parts = irreproducible(load, "");
    parts.insert(parts.begin(), "a computed path");
    const std::string why = spoken_list(parts);
    for (const auto& part : load.path_parts) {
        const std::string leaf = fs::path(part).filename().string();
        for (const auto& k : kernels)
            if (k.filename() == leaf && path_is_under(k, py.parent_path()))
                out.refused[k].push_back(site + ": " + why);
    }
}

PackageLoads find_package_loads(const fs::path& root, const std::vector<fs::path>& kernels) {
    const std::set<fs::path> kernel_set(kernels.begin(), kernels.end());
    PackageLoads out;
    for (const auto& py : files_below(root, is_package_python)) {
        auto text = read_file(py);
        if (!text) continue;
        const fs::path py_real = resolved_path(py);
        for (const auto& load : find_kernel_loads(*text)) {
            const std::string site = relative_text(py_real, root) + ":" + std::to_string(load.line);
            auto evaluated = evaluate_load_path(load.path_text, py_real.generic_string());
            if (!evaluated) {
                refuse_computed_path(load, site, py_real, kernels, out);
                continue;
            }
            const fs::path file = fs::path(*evaluated).lexically_normal();
            if (!kernel_set.count(file)) continue;  // not a kernel file of this package
            const std::string name = load.name.empty() ? path_stem(*evaluated) : load.name;
            const std::string why = spoken_list(irreproducible(load, name));
            if (why.empty())
                out.loaded[file].emplace(name, site);
            else
                out.refused[file].push_back(site + ": " + why);
        }
    }
    return out;
}

// One name, two files: neither is built under it.
void refuse_shared_names(const fs::path& root, PackageLoads& loads) {
    std::map<std::string, std::vector<fs::path>> files_of;
    for (const auto& [file, names] : loads.loaded)
        for (const auto& entry : names) files_of[entry.first].push_back(file);
    for (const auto& [name, files] : files_of) {
        if (files.size() < 2) continue;
        std::string all;
        for (const auto& f : files)
            all += (all.empty() ? "" : ", ") + relative_text(f, root) + " (" +
                   loads.loaded[f][name] + ")";
        for (const auto& f : files) {
            loads.refused[f].push_back("the package loads " + all + " all as " + name);
            loads.loaded[f].erase(name);
        }
    }
}

// Why a kernel file the package never loads as it is is only checked.
std::string only_checked_reason(const PackageLoads& loads, const fs::path& file) {
    const auto why = loads.refused.find(file);
    if (why == loads.refused.end())
        return "no load_cuda_file or load_cpp_file call of the package names it by a "
               "path bekc can evaluate";
    std::string reason = "the package loads it only in ways a prebuild cannot reproduce (";
    for (size_t i = 0; i < why->second.size(); ++i) reason += (i ? "; " : "") + why->second[i];
    return reason + ")";
}

}  // namespace

PackagePlan plan_package(const fs::path& package) {
    PackagePlan plan;
    plan.root = resolved_path(package);
    const fs::path& root = plan.root;
    std::vector<fs::path> kernels;
    for (const auto& f : files_below(root, is_package_kernel)) kernels.push_back(resolved_path(f));
    plan.files = kernels.size();
    PackageLoads loads = find_package_loads(root, kernels);
    refuse_shared_names(root, loads);

    std::set<std::string> taken;
    for (const auto& [file, names] : loads.loaded)
        for (const auto& entry : names) taken.insert(entry.first);
    for (const auto& file : kernels) {
        const auto it = loads.loaded.find(file);
        if (it != loads.loaded.end() && !it->second.empty()) {
            for (const auto& [name, site] : it->second)
                plan.modules.push_back({file, name, site, ""});
            continue;
        }
        const std::string name = check_module_name(fs::path(relative_text(file, root)));
        std::string reason = only_checked_reason(loads, file);
        if (!valid_module_name(name) || !taken.insert(name).second) {
            plan.skipped.push_back(
                {file,
                 reason + "; and its check name " + name +
                     (valid_module_name(name) ? " is taken by another module" : " is too long")});
            continue;
        }
        plan.modules.push_back({file, name, "", reason});
    }
    return plan;
}

size_t PackagePlan::as_loaded() const {
    return static_cast<size_t>(std::count_if(modules.begin(), modules.end(),
                                             [](const auto& m) { return !m.load_site.empty(); }));
}

std::string PackagePlan::summary() const {
    const size_t loaded = as_loaded();
    std::string out =
        "bekc: package " + root.string() + ": " + std::to_string(files) + " kernel files, " +
        std::to_string(loaded) + " modules as the package loads them, " +
        std::to_string(modules.size() - loaded) + " only checked (their first use compiles)";
    if (!skipped.empty()) out += ", " + std::to_string(skipped.size()) + " not built";
    return out;
}

std::vector<std::string> PackagePlan::notes() const {
    std::vector<std::string> out;
    for (const auto& m : modules)
        if (m.load_site.empty())
            out.push_back("bekc: note: " + relative_text(m.source, root) + " is only checked, as " +
                          m.name + ": " + m.why_check);
    for (const auto& s : skipped)
        out.push_back("bekc: note: " + relative_text(s.source, root) +
                      " is not built: " + s.reason);
    return out;
}

std::vector<fs::path> files_below(const fs::path& dir,
                                  const std::function<bool(const fs::path&)>& want) {
    std::vector<fs::path> out;
    std::error_code ec;
    // Symbolic links are not followed: a package is what its directory holds.
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_symlink(ec)) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file(ec) && want(it->path())) out.push_back(it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace bekc
