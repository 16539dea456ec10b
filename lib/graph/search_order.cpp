#include "graph/search_order.hpp"

#include <algorithm>
#include <set>

#include "plan/include_flags.hpp"
#include "toolchain/compiler_env.hpp"
#include "toolchain/flag_files.hpp"

namespace bekc {

namespace {

// One compiler's include directories from its flags, by where they go
// around bekc's own -I options and the environment's directories.
struct FlagChains {
    std::vector<std::string> quote, angled_before, angled_after, system, after;
    bool cuda = false;
};

bool compiles(const BuildInputs& in, bool cuda) {
    return std::any_of(in.files.begin(), in.files.end(),
                       [cuda](const SourceFile& f) { return f.cuda == cuda; });
}

// The response files' words as read_flag_files read and keyed them; names
// count from the working directory, as the compilers open them.
ResponseFileWords response_files(const BuildInputs& in) {
    std::error_code ec;
    return [&in, cwd = fs::current_path(ec)](std::string_view name) {
        return response_file_words_of(in.flag_files, name, cwd);
    };
}

FlagChains host_chains(const BuildInputs& in) {
    IncludeFlagDirs f = host_include_dirs(in.flags.cxx_flags, response_files(in));
    return {std::move(f.quote), {},   std::move(f.angled), std::move(f.system),
            std::move(f.after), false};
}

// nvcc's options: its environment's around bekc's flags, as nvcc reads them.
FlagChains nvcc_chains(const BuildInputs& in) {
    NvccIncludeDirs n =
        nvcc_include_dirs(nvcc_env_flags(in.env).around(in.flags.cuda_flags), response_files(in));
    std::vector<std::string> system = std::move(n.host.system);
    system.insert(system.end(), n.system.begin(), n.system.end());
    return {std::move(n.host.quote), std::move(n.host.angled), std::move(n.angled),
            std::move(system),       std::move(n.host.after),  true};
}

// The chains of the compilers the inputs use: the host compiler's, then
// nvcc's.
std::vector<FlagChains> chains_in_use(const BuildInputs& in) {
    std::vector<FlagChains> out;
    if (compiles(in, false) || in.files.empty()) out.push_back(host_chains(in));
    if (compiles(in, true)) out.push_back(nvcc_chains(in));
    return out;
}

class OrderBuilder {
  public:
    explicit OrderBuilder(PhysicalPaths& paths) : paths_(paths) {}

    template <class Dirs>
    void add(const Dirs& dirs) {
        for (const auto& d : dirs) add_one(d);
    }
    // "/inc/" is "/inc".
    void add_one(const fs::path& dir) {
        std::string d = paths_.normal(dir).native();
        while (d.size() > 1 && d.back() == '/') d.pop_back();
        dirs_.emplace_back(std::move(d));
    }
    void end_quote() { quote_only_ = dirs_.size(); }

    // Each directory at its last place.
    SearchOrder take(bool cuda) {
        SearchOrder out;
        out.cuda = cuda;
        std::set<fs::path> later;
        for (size_t i = dirs_.size(); i-- > 0;) {
            if (!later.insert(dirs_[i]).second) {
                dirs_[i].clear();
                if (i < quote_only_) --quote_only_;
            }
        }
        for (auto& d : dirs_)
            if (!d.empty()) out.dirs.push_back(std::move(d));
        out.quote_only = quote_only_;
        return out;
    }

  private:
    PhysicalPaths& paths_;
    std::vector<fs::path> dirs_;
    size_t quote_only_ = 0;
};

}  // namespace

std::vector<fs::path> system_include_dirs(const std::string& multiarch) {
    std::vector<fs::path> dirs = {"/usr/local/include"};
    if (!multiarch.empty()) dirs.push_back(fs::path("/usr/include") / multiarch);
    dirs.emplace_back("/usr/include");
    return dirs;
}

std::vector<SearchOrder> search_orders(const BuildInputs& in, const std::string& multiarch,
                                       const fs::path& runtime_dir, PhysicalPaths& paths) {
    std::vector<SearchOrder> orders;
    for (const FlagChains& c : chains_in_use(in)) {
        OrderBuilder b(paths);
        b.add(c.quote);
        b.end_quote();
        b.add(c.angled_before);
        b.add(in.flags.include_dirs);
        b.add_one(runtime_dir);
        if (!in.flags.xla_include.empty()) b.add_one(in.flags.xla_include);
        b.add(c.angled_after);
        b.add(in.env.include_dirs);
        b.add(c.system);
        b.add(in.env.system_include_dirs);
        b.add(system_include_dirs(multiarch));
        b.add(c.after);
        orders.push_back(b.take(c.cuda));
    }
    return orders;
}

std::vector<fs::path> flag_include_dirs(const BuildInputs& in) {
    std::vector<fs::path> out;
    for (const FlagChains& c : chains_in_use(in))
        for (const auto* chain : {&c.quote, &c.angled_before, &c.angled_after, &c.system, &c.after})
            for (const auto& d : *chain) out.push_back(fs::absolute(d));
    return out;
}

}  // namespace bekc
