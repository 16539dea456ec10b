#include "package/package_plan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "prep/build_args.hpp"
#include "prep/inputs.hpp"
#include "scan/loader_keywords.hpp"
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

// The row of `keyword` for `load`'s loader (scan/loader_keywords.hpp), or
// nullptr when that loader takes no such keyword.
const LoaderKeyword* loader_keyword(const KernelLoad& load, const std::string& keyword) {
    const std::string_view kind = load.function == "load_cpp_file" ? "cxx" : "cuda";
    for (const LoaderKeyword& k : kLoaderKeywords)
        if (k.keyword == keyword && (k.kind.empty() || k.kind == kind)) return &k;
    return nullptr;
}

// Whether a load that passes `keyword` makes the library the prebuild makes
// without it (a call that passes only such keywords, and `name`, is one the
// prebuild reproduces).
bool key_neutral(const KernelLoad& load, const std::string& keyword) {
    const LoaderKeyword* k = loader_keyword(load, keyword);
    return k && k->prebuild == PrebuildUse::Ignore;
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

// Whether bekc's loader raises on `entry` of a flag argument that becomes
// `option`, so the package's load never builds (python/bekc/_options.py): an
// empty entry or a NUL anywhere, a line break in a link flag, a comma in a
// CUDA linker argument (nvcc's -Xlinker would split it).
bool loader_refuses(std::string_view option, const std::string& entry) {
    const bool link = option == "--ldflag" || option == "--linker-arg";
    return entry.empty() || entry.find('\0') != std::string::npos ||
           (link && entry.find_first_of("\n\r") != std::string::npos) ||
           (option == "--linker-arg" && entry.find(',') != std::string::npos);
}

// Keyword `keyword` of `load` as `bekc build` arguments, added to `args`,
// when it is a flag argument given as a literal list the loader takes; else
// why not.
std::string take_flag_argument(const KernelLoad& load, const std::string& keyword,
                               std::vector<std::string>& args) {
    const LoaderKeyword* k = loader_keyword(load, keyword);
    const auto list = load.string_lists.find(keyword);
    if (!k || k->prebuild != PrebuildUse::Flags || list == load.string_lists.end()) return keyword;
    for (const auto& entry : list->second)
        if (loader_refuses(k->option, entry))
            return keyword + " entry '" + entry + "', which the loader refuses";
    for (const auto& entry : list->second) args.push_back(std::string(k->option) + "=" + entry);
    return "";
}

// What in a load a prebuild cannot reproduce (nothing when it can), given the
// name it resolves to (empty when its path is computed); the flags it passes
// go to `flags`, read as `bekc build` reads them (prep/build_args).
std::vector<std::string> irreproducible(const KernelLoad& load, const std::string& name,
                                        CompileFlags& flags) {
    std::vector<std::string> why;
    const bool has_name = std::count(load.keywords.begin(), load.keywords.end(), "name") > 0;
    if (has_name && load.name.empty()) why.push_back("a computed name");
    if (load.positional > 1) why.push_back("a functions argument");
    std::vector<std::string> args = {"input"};
    for (const auto& k : load.keywords)
        if (!key_neutral(load, k))
            if (std::string refused = take_flag_argument(load, k, args); !refused.empty())
                why.push_back(refused);
    if (auto parsed = parse_build_args(args))
        flags = parsed->flags;
    else
        why.push_back("flags bekc build refuses (" + parsed.error() + ")");
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

// One way the package loads a file under a name: where first, with which flags.
struct LoadedAs {
    std::string site;
    CompileFlags flags;
};

// What the package's Python files say of its kernel files.
struct PackageLoads {
    // file -> name -> each distinct set of flags it is loaded with
    std::map<fs::path, std::map<std::string, std::vector<LoadedAs>>> loaded;
    std::map<fs::path, std::vector<std::string>> refused;  // file -> "site: why" lines
};

// A load whose path bekc cannot evaluate: the file it names is not known; a
// literal of the path that is a kernel file's name points at the candidates
// below the .py.
void refuse_computed_path(const KernelLoad& load, const std::string& site, const fs::path& py,
                          const std::vector<fs::path>& kernels, PackageLoads& out) {
    CompileFlags unused;
    std::vector<std::string> parts = irreproducible(load, "", unused);
    parts.insert(parts.begin(), "a computed path");
    const std::string why = spoken_list(parts);
    for (const auto& part : load.path_parts) {
        const std::string leaf = fs::path(part).filename().string();
        for (const auto& k : kernels)
            if (k.filename() == leaf && path_is_under(k, py.parent_path()))
                out.refused[k].push_back(site + ": " + why);
    }
}

PackageLoads find_package_loads(const fs::path& root, const std::vector<fs::path>& python,
                                const std::vector<fs::path>& kernels,
                                std::vector<UnreadPath>& unread) {
    const std::set<fs::path> kernel_set(kernels.begin(), kernels.end());
    PackageLoads out;
    for (const auto& py : python) {
        auto text = read_file(py, ReadOptions{.follow_symlinks = false});
        if (!text) {
            unread.push_back({py, text.error().message, "the loads in it are not known"});
            continue;
        }
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
            CompileFlags flags;
            const std::string why = spoken_list(irreproducible(load, name, flags));
            if (!why.empty()) {
                out.refused[file].push_back(site + ": " + why);
                continue;
            }
            auto& ways = out.loaded[file][name];
            if (std::none_of(ways.begin(), ways.end(),
                             [&](const LoadedAs& w) { return w.flags == flags; }))
                ways.push_back({site, std::move(flags)});
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
                   loads.loaded[f][name].front().site + ")";
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

namespace {

// The kernel files and the Python files below the package, each kernel file
// the user may read; what cannot be read goes to `plan.unread`.
std::pair<std::vector<fs::path>, std::vector<fs::path>> package_sources(PackagePlan& plan) {
    FilesBelow below = files_below(
        plan.root, [](const fs::path& p) { return is_package_kernel(p) || is_package_python(p); });
    plan.unread = std::move(below.unread);
    std::vector<fs::path> kernels, python;
    for (const auto& f : below.files) {
        if (is_package_python(f)) {
            python.push_back(f);
        } else if (::access(f.c_str(), R_OK) != 0) {
            plan.unread.push_back(
                {f, errno_message("read", f, errno), "it is neither built nor checked"});
        } else {
            kernels.push_back(resolved_path(f));
        }
    }
    return {kernels, python};
}

}  // namespace

PackagePlan plan_package(const fs::path& package) {
    PackagePlan plan;
    plan.root = resolved_path(package);
    const fs::path& root = plan.root;
    const auto [kernels, python] = package_sources(plan);
    plan.files = kernels.size();
    PackageLoads loads = find_package_loads(root, python, kernels, plan.unread);
    refuse_shared_names(root, loads);
    std::sort(plan.unread.begin(), plan.unread.end(),
              [](const UnreadPath& a, const UnreadPath& b) { return a.path < b.path; });

    std::set<std::string> taken;
    for (const auto& [file, names] : loads.loaded)
        for (const auto& entry : names) taken.insert(entry.first);
    for (const auto& file : kernels) {
        const auto it = loads.loaded.find(file);
        if (it != loads.loaded.end() && !it->second.empty()) {
            for (const auto& [name, ways] : it->second)
                for (const auto& way : ways)
                    plan.modules.push_back({file, name, way.site, "", way.flags});
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
        plan.modules.push_back({file, name, "", reason, {}});
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
    if (!unread.empty())
        out += ", " + std::to_string(unread.size()) + (unread.size() == 1 ? " path" : " paths") +
               " bekc cannot read";
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
    for (const auto& u : unread)
        out.push_back("bekc: note: " + relative_text(u.path, root) + " cannot be read (" +
                      u.reason + "): " + u.effect);
    return out;
}

namespace {

// A directory to list, and what lstat(2) said it was in its parent: the one
// opened must be that one, so a link put in its place is never followed.
struct DirToList {
    fs::path path;
    dev_t dev = 0;
    ino_t ino = 0;
};

struct DirEntryStat {
    fs::path path;
    struct stat st;
};

// The entries of `d` as lstat(2) sees them, read through one descriptor,
// closed before it returns; what could not be read goes to `unread`.
std::vector<DirEntryStat> list_directory(const DirToList& d, std::vector<UnreadPath>& unread) {
    const std::string below = "what is below it is neither built nor checked";
    UniqueFd fd(::open(d.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!fd.valid()) {
        unread.push_back({d.path, errno_message("open directory", d.path, errno), below});
        return {};
    }
    if (::fstat(fd.get(), &st) != 0 || st.st_dev != d.dev || st.st_ino != d.ino) {
        unread.push_back({d.path, d.path.string() + " changed while bekc read it", below});
        return {};
    }
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd.get()), ::closedir);
    if (!dir) {
        unread.push_back({d.path, errno_message("read directory", d.path, errno), below});
        return {};
    }
    fd.release();
    std::vector<DirEntryStat> out;
    for (;;) {
        errno = 0;
        const dirent* e = ::readdir(dir.get());
        if (!e) break;
        const std::string_view name = e->d_name;
        if (name == "." || name == "..") continue;
        DirEntryStat entry{d.path / name, {}};
        if (::fstatat(::dirfd(dir.get()), e->d_name, &entry.st, AT_SYMLINK_NOFOLLOW) == 0)
            out.push_back(std::move(entry));
        else
            unread.push_back({entry.path, errno_message("examine", entry.path, errno),
                              "it is neither built nor checked"});
    }
    if (errno != 0)
        unread.push_back({d.path, errno_message("read directory", d.path, errno),
                          "some of what is below it is neither built nor checked"});
    return out;
}

}  // namespace

FilesBelow files_below(const fs::path& dir, const std::function<bool(const fs::path&)>& want) {
    FilesBelow out;
    struct stat st;
    const int err = ::lstat(dir.c_str(), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (err != 0) {
        out.unread.push_back({dir, errno_message("open directory", dir, err),
                              "what is below it is neither built nor checked"});
        return out;
    }
    // Depth first, one directory open at a time; a directory reached twice
    // (a bind mount of its parent) is listed once.
    std::vector<DirToList> pending = {{dir, st.st_dev, st.st_ino}};
    std::set<std::pair<dev_t, ino_t>> seen = {{st.st_dev, st.st_ino}};
    while (!pending.empty()) {
        const DirToList d = std::move(pending.back());
        pending.pop_back();
        for (auto& e : list_directory(d, out.unread)) {
            if (S_ISDIR(e.st.st_mode)) {
                if (seen.insert({e.st.st_dev, e.st.st_ino}).second)
                    pending.push_back({std::move(e.path), e.st.st_dev, e.st.st_ino});
            } else if (S_ISREG(e.st.st_mode) && want(e.path)) {
                out.files.push_back(std::move(e.path));
            }
            // A symbolic link, a FIFO, a device: not a file of the package.
        }
    }
    std::sort(out.files.begin(), out.files.end());
    std::sort(out.unread.begin(), out.unread.end(),
              [](const UnreadPath& a, const UnreadPath& b) { return a.path < b.path; });
    return out;
}

}  // namespace bekc
