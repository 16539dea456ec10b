#include "driver/keys.hpp"

#include <algorithm>
#include <set>

#include "driver/runtime_headers.hpp"
#include "store/hash.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/version.hpp"

namespace bekc {

namespace {

bool under(const fs::path& p, const fs::path& dir) {
    auto rel = p.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
}

// The host compilers' own headers: covered by the compiler's identity.
constexpr std::string_view kCompilerPrivateDirs[] = {"/usr/lib/gcc/", "/usr/include/c++/",
                                                     "/usr/lib/llvm-"};

const std::string& embedded_hash() {
    static const std::string hash = [] {
        Sha256 h;
        for (const auto& f : embedded_files()) {
            h.update(std::to_string(f.path.size()) + ":" + std::string(f.path));
            h.update(std::to_string(f.data.size()) + ":" + std::string(f.data));
        }
        return h.final_hex();
    }();
    return hash;
}

}  // namespace

KeyBuilder direct_key_builder(const KeyInputs& in) {
    KeyBuilder k("direct");
    k.add("bekc_version", kVersion).add("embedded", embedded_hash());
    k.add("name", in.name).add("target_prefix", in.target_prefix);
    for (const auto& f : *in.files) {
        k.add("input.path", fs::absolute(f.path).lexically_normal().string());
        k.add("input.sha256", sha256_hex(f.text));
    }
    for (const auto& s : in.explicit_specs) {
        std::vector<std::string> toks;
        for (const auto& t : s.tokens) toks.push_back(t.text);
        k.add("function", s.name).add_list("function.tokens", toks);
    }
    k.add("nvcc", in.nvcc ? in.nvcc->identity() : "").add("nvcc_version", in.nvcc_version);
    k.add("cxx", in.cxx.identity()).add("cxx_version", in.cxx_version);
    k.add("archs", arch_list_string(in.archs));
    k.add("opt_level", in.flags.opt_level).add("fast_math", in.flags.fast_math ? 1 : 0);
    k.add("std", in.flags.cxx_std);
    k.add_list("include_dirs", in.flags.include_dirs).add_list("defines", in.flags.defines);
    k.add_list("cuda_flags", in.flags.cuda_flags).add_list("cxx_flags", in.flags.cxx_flags);
    k.add_list("ldflags", in.flags.ldflags).add_list("linker_args", in.flags.linker_args);
    k.add("xla_include", in.flags.xla_include);
    return k;
}

bool is_toolchain_header(const fs::path& p, const KeyInputs& in) {
    // nvcc reports headers through whichever path it was called by
    // (/usr/local/cuda -> /usr/local/cuda-13.0): accept both roots.
    if (in.nvcc && (under(p, in.nvcc->path.parent_path().parent_path()) ||
                    under(p, in.nvcc->canonical.parent_path().parent_path())))
        return true;
    std::string s = p.string();
    for (auto dir : kCompilerPrivateDirs)
        if (s.rfind(dir, 0) == 0) return true;
    return false;
}

namespace {

// The host compiler's search order for <...> after the -I directories.
const std::vector<fs::path>& system_include_dirs() {
    static const std::vector<fs::path> dirs = {"/usr/local/include",
                                               "/usr/include/x86_64-linux-gnu", "/usr/include"};
    return dirs;
}

// Paths where a new file would be found before `dep` (SPEC: "a header that
// newly shadows a recorded one must miss"). `dep` was found under the first
// directory of `order` that holds it, by its path R relative to it; a file R
// under any earlier directory, or under a directory that quoted includes
// search first (`includers`: the dirs of the inputs and user headers), would
// win. Candidates that exist now cannot have been passed over and are left
// out, so the record stays valid.
std::vector<fs::path> shadow_candidates(const fs::path& dep, const std::vector<fs::path>& order,
                                        const std::vector<fs::path>& includers) {
    std::vector<fs::path> out;
    for (size_t i = 0; i < order.size(); ++i) {
        if (!under(dep, order[i])) continue;
        fs::path rel = dep.lexically_relative(order[i]);
        auto add = [&](const fs::path& dir) {
            fs::path c = (dir / rel).lexically_normal();
            std::error_code ec;
            if (c != dep && !fs::exists(c, ec)) out.push_back(c);
        };
        for (const auto& d : includers) add(d);
        for (size_t j = 0; j < i; ++j) add(order[j]);
        break;
    }
    return out;
}

bool is_system_header(const fs::path& p) {
    for (const auto& d : system_include_dirs())
        if (under(p, d)) return true;
    return false;
}

}  // namespace

DependencySet classify_dependencies(const std::vector<std::string>& deps, const KeyInputs& in,
                                    const fs::path& runtime_include, const fs::path& build_dir) {
    DependencySet out;
    std::set<fs::path> inputs, seen;
    std::vector<fs::path> include_dirs;
    for (const auto& f : *in.files) inputs.insert(fs::absolute(f.path).lexically_normal());
    for (const auto& d : in.flags.include_dirs)
        include_dirs.push_back(fs::path(d).lexically_normal());
    std::vector<fs::path> recorded, runtime_used;
    std::error_code ec;
    fs::path runtime_root = fs::weakly_canonical(runtime_include.parent_path(), ec);
    fs::path runtime_dir = fs::weakly_canonical(runtime_include, ec);
    for (const auto& d : deps) {
        fs::path p = fs::absolute(d).lexically_normal();
        if (!seen.insert(p).second) continue;
        // Runtime headers may be reported through the plain-named link nvcc
        // was given (driver/safe_paths.hpp): compare real paths for those.
        // They are covered by bekc's version, but a user's directory searched
        // before them may come to hold one of their names.
        fs::path real = fs::weakly_canonical(p, ec);
        if (under(p, runtime_root) || under(real, runtime_root)) {
            if (under(real, runtime_dir)) runtime_used.push_back(real);
            continue;
        }
        if (inputs.count(p) || under(p, build_dir) || is_toolchain_header(p, in)) continue;
        auto sha = sha256_file(p);
        if (!sha)
            throw FatalError(
                "bekc: error: cannot read dependency " + p.string() + ": " + sha.error(),
                kExitSourceError);
        out.hashed.emplace_back(p.string(), *sha);
        out.direct.dependencies.push_back({p, *sha});
        if (!is_system_header(p)) out.user_headers.push_back(p.string());
        recorded.push_back(p);
    }
    // Quoted includes look next to the including file first: the inputs' and
    // the user headers' directories.
    std::set<fs::path> includer_set;
    for (const auto& i : inputs) includer_set.insert(i.parent_path());
    for (const auto& h : out.user_headers) includer_set.insert(fs::path(h).parent_path());
    std::vector<fs::path> includers(includer_set.begin(), includer_set.end());
    // The -I order of preprocessor_flags(): the user's directories, bekc's
    // runtime headers, XLA's headers.
    std::vector<fs::path> user_order = include_dirs;
    user_order.push_back(runtime_dir);
    if (!in.flags.xla_include.empty()) user_order.emplace_back(in.flags.xla_include);
    std::vector<fs::path> system_order = user_order;
    system_order.insert(system_order.end(), system_include_dirs().begin(),
                        system_include_dirs().end());
    std::set<fs::path> absent;
    for (const auto& p : runtime_used)
        for (auto& c : shadow_candidates(p, user_order, includers)) absent.insert(std::move(c));
    for (const auto& p : recorded) {
        bool system = is_system_header(p);
        for (auto& c : shadow_candidates(p, system ? system_order : user_order,
                                         system ? std::vector<fs::path>{} : includers))
            absent.insert(std::move(c));
    }
    out.direct.must_not_exist.assign(absent.begin(), absent.end());
    return out;
}

KeyBuilder full_key_builder(const std::string& direct_key, const DependencySet& deps) {
    KeyBuilder k("build");
    k.add("direct_key", direct_key);
    for (const auto& [path, sha] : deps.hashed) k.add("dep.path", path).add("dep.sha256", sha);
    return k;
}

}  // namespace bekc
