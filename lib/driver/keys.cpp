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
    k.add_list("ldflags", in.flags.ldflags);
    return k;
}

bool is_toolchain_header(const fs::path& p, const KeyInputs& in) {
    if (in.nvcc && under(p, in.nvcc->path.parent_path().parent_path())) return true;
    std::string s = p.string();
    for (auto dir : kCompilerPrivateDirs)
        if (s.rfind(dir, 0) == 0) return true;
    return false;
}

DependencySet classify_dependencies(const std::vector<std::string>& deps, const KeyInputs& in,
                                    const fs::path& runtime_include, const fs::path& build_dir) {
    DependencySet out;
    std::set<fs::path> inputs, seen;
    std::vector<fs::path> search_dirs;
    for (const auto& f : *in.files) {
        fs::path abs = fs::absolute(f.path).lexically_normal();
        inputs.insert(abs);
        search_dirs.push_back(abs.parent_path());
    }
    for (const auto& d : in.flags.include_dirs) search_dirs.push_back(fs::path(d).lexically_normal());
    std::set<fs::path> absent;
    for (const auto& d : deps) {
        fs::path p = fs::absolute(d).lexically_normal();
        if (!seen.insert(p).second) continue;
        if (inputs.count(p) || under(p, build_dir) || under(p, runtime_include.parent_path()) ||
            is_toolchain_header(p, in))
            continue;
        auto sha = sha256_file(p);
        if (!sha)
            throw FatalError("bekc: error: cannot read dependency " + p.string() + ": " + sha.error(),
                             kExitSourceError);
        out.hashed.emplace_back(p.string(), *sha);
        out.direct.dependencies.push_back({p, *sha});
        if (p.string().rfind("/usr/include/", 0) != 0) out.user_headers.push_back(p.string());
        for (auto& s : shadowing_paths(search_dirs, p)) absent.insert(s);
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
