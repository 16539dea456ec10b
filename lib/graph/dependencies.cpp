#include "graph/dependencies.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "graph/search_order.hpp"
#include "scan/includes.hpp"
#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "toolchain/link_search.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

// The host compilers' own files (headers, startup files, libstdc++):
// covered by the compiler's identity.
constexpr std::string_view kCompilerPrivateDirs[] = {"/usr/lib/gcc/", "/usr/include/c++/",
                                                     "/usr/lib/llvm-"};

}  // namespace

bool is_toolchain_header(const fs::path& p, const BuildInputs& in) {
    // nvcc reports headers through whichever path it was called by
    // (/usr/local/cuda -> /usr/local/cuda-13.0): accept both roots.
    if (in.nvcc && (path_is_under(p, in.nvcc->path.parent_path().parent_path()) ||
                    path_is_under(p, in.nvcc->canonical.parent_path().parent_path())))
        return true;
    std::string s = p.string();
    for (auto dir : kCompilerPrivateDirs)
        if (s.rfind(dir, 0) == 0) return true;
    return false;
}

namespace {

// Paths where a new file would be found before `dep` (SPEC: "a header that
// newly shadows a recorded one must miss"; store/direct.hpp,
// shadowing_paths). Those that exist now cannot have been passed over and are
// left out, so the record stays valid.
std::vector<fs::path> shadow_candidates(const fs::path& dep, const std::vector<fs::path>& order,
                                        const std::vector<fs::path>& includers,
                                        std::vector<fs::path>& present) {
    std::vector<fs::path> out;
    for (auto& c : shadowing_paths(order, dep, includers)) {
        std::error_code ec;
        if (!fs::exists(c, ec))
            out.push_back(std::move(c));
        else
            present.push_back(std::move(c));
    }
    return out;
}

bool is_system_header(const fs::path& p, const std::string& multiarch) {
    for (const auto& d : system_include_dirs(multiarch))
        if (path_is_under(p, d)) return true;
    return false;
}

// The C library and its kin: keyed like any file, but not the user's, so not
// in --depfile.
bool is_system_library(const fs::path& p) {
    for (const fs::path d : {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"})
        if (path_is_under(p, d)) return true;
    return false;
}

// Paths where a new library would be found before `lib`, which the linker
// found for one of the -l names: the same file names in every directory it
// searched first, and a shared library beside the static one it settled for.
void library_shadows(const fs::path& lib, const LinkerSearch& s, std::set<fs::path>& absent) {
    std::vector<fs::path> order = library_order(s);
    fs::path dir = lib.parent_path();
    for (const auto& name : s.names) {
        std::vector<std::string> files = library_file_names(name);
        auto at = std::find(files.begin(), files.end(), lib.filename().string());
        if (at == files.end()) continue;
        auto add = [&](const fs::path& c) {
            if (presence(c) == Presence::Absent) absent.insert(c);
        };
        // Found outside every known directory (nvcc's toolkit -L): all of
        // the user's directories come first.
        auto pos = std::find(order.begin(), order.end(), dir);
        auto stop = pos == order.end() ? order.begin() + static_cast<long>(s.dirs.size()) : pos;
        for (auto d = order.begin(); d != stop; ++d)
            for (const auto& f : files) add(*d / f);
        for (auto f = files.begin(); f != at; ++f) add(dir / *f);
    }
}

// A `__has_include` found in `file`: the directories it searches, in order.
// Quoted operands look beside the file first, then in the -iquote
// directories; `_next` resumes after the directory `file` was found in (from
// the start when it is in none, as GCC does for a primary source).
std::vector<fs::path> has_include_chain(const HasIncludeOperand& o, const fs::path& file,
                                        const SearchOrder& order) {
    const std::vector<fs::path>& dirs = order.dirs;
    std::vector<fs::path> chain;
    if (o.next) {
        auto it = std::find_if(dirs.begin(), dirs.end(),
                               [&](const fs::path& d) { return path_is_under(file, d); });
        if (it != dirs.end()) return {it + 1, dirs.end()};
    }
    if (!o.angled) chain.push_back(file.parent_path());
    auto from = o.angled ? dirs.begin() + static_cast<long>(order.quote_only) : dirs.begin();
    chain.insert(chain.end(), from, dirs.end());
    return chain;
}

// One run of classify_dependencies: the files seen so far and what they
// were sorted into. Its steps run in order: the compilers' files, the
// linker's, then the paths whose appearance would change the build.
class Classifier {
  public:
    Classifier(const BuildInputs& in, const std::string& multiarch, const fs::path& runtime_include,
               const fs::path& build_dir)
        : in_(in), multiarch_(multiarch), build_dir_(build_dir) {
        // Before any file is examined: the direct record's time (store/direct.hpp).
        out_.direct.examined_ns = now_ns();
        for (const auto& f : in.files) inputs_.insert(paths_.normal(f.path));
        std::error_code ec;
        runtime_root_ = fs::weakly_canonical(runtime_include.parent_path(), ec);
        runtime_dir_ = fs::weakly_canonical(runtime_include, ec);
        if (!in.base.empty()) real_base_ = resolved_path(in.base.dir());
        std::vector<fs::path> dirs = flag_include_dirs(in);
        dirs.insert(dirs.end(), in.flags.include_dirs.begin(), in.flags.include_dirs.end());
        for (const auto& d : dirs)
            if (fs::path n = paths_.normal(d); spelled_through_base(d, n))
                relative_roots_.push_back(std::move(n));
    }

    // What the compilers read: bekc's runtime headers set aside, the rest
    // keyed but for the inputs, the build directory and the toolchain's.
    void add_compiled(const std::vector<std::string>& reported) {
        for (const auto& d : reported) {
            // As the compiler opened it: "src/../x.h" leaves where src leads.
            fs::path spelled = fs::absolute(d);
            fs::path p = paths_.normal(spelled);
            if (!seen_.insert(p).second) continue;
            if (spelled_through_base(spelled, p)) relative_roots_.push_back(p.parent_path());
            if (is_runtime(p)) {
                // A user's directory searched before them may come to hold
                // one of their names.
                fs::path real = real_paths_.resolve(p);
                if (path_is_under(real, runtime_dir_)) runtime_used_.push_back(real);
                continue;
            }
            if (inputs_.count(p) || path_is_under(p, build_dir_) || is_toolchain_header(p, in_))
                continue;
            bool user = !is_system_header(p, multiarch_);
            key_file(p, user, spelled);
            if (user) user_headers_.push_back(p);
            recorded_.push_back(p);
        }
        for (const auto& h : user_headers_) out_.user_headers.push_back(anchored(h).string());
    }

    // What the linker read: its own list, else what the flags name. The
    // toolchain's startup files and libraries are covered by its identity;
    // the rest (the user's libraries, the C library) is keyed.
    void add_linked(const ReportedDependencies& reported, const LinkerSearch& search) {
        std::vector<fs::path> link_files = reported.link_reported
                                               ? linker_reported_files(reported.link)
                                               : link_inputs_from_flags(search);
        for (const auto& p : link_files) {
            if (!seen_.insert(p).second || inputs_.count(p) || path_is_under(p, build_dir_) ||
                is_runtime(p))
                continue;
            libraries_.push_back(p);
            if (is_toolchain_header(p, in_)) continue;
            if (presence(p) == Presence::Absent && is_driver_temporary(p)) continue;
            key_file(p, false);
            if (!is_system_library(p)) out_.user_headers.push_back(p.string());
        }
    }

    // The compilers' search orders (graph/search_order.hpp).
    std::vector<SearchOrder> search_orders() {
        return bekc::search_orders(in_, multiarch_, runtime_dir_, paths_);
    }

    // Where a new header or library would be found before one read, by any
    // of the compilers: a header may have been read by either.
    void add_shadows(const std::vector<SearchOrder>& orders, const LinkerSearch& search) {
        // Quoted includes look next to the including file first: the inputs'
        // and the user headers' directories.
        std::set<fs::path> includer_set;
        for (const auto& i : inputs_) includer_set.insert(i.parent_path());
        for (const auto& h : user_headers_) includer_set.insert(h.parent_path());
        std::vector<fs::path> includers(includer_set.begin(), includer_set.end());
        for (const auto& order : orders) {
            for (const auto& p : runtime_used_)
                for (auto& c : shadow_candidates(p, order.dirs, includers, out_.present_shadows))
                    absent_.insert(std::move(c));
            for (const auto& p : recorded_) {
                bool system = is_system_header(p, multiarch_);
                for (auto& c :
                     shadow_candidates(p, order.dirs, system ? std::vector<fs::path>{} : includers,
                                       out_.present_shadows))
                    absent_.insert(std::move(c));
            }
        }
        for (const auto& lib : libraries_) library_shadows(lib, search, absent_);
    }

    // `__has_include` in the inputs and the user's headers: every place the
    // compiler looked without finding the header must stay empty, and the
    // file it found (included or not) must stay as it is.
    // An input is searched for by its own compiler, a user header by any.
    void add_has_includes(const std::vector<SearchOrder>& orders) {
        struct Text {
            fs::path file;
            std::string text;
            std::optional<bool> cuda;  // the compiler that reads it, or any
        };
        std::vector<Text> texts;
        for (const auto& f : in_.files) texts.push_back({paths_.normal(f.path), f.text, f.cuda});
        for (const auto& h : user_headers_)
            texts.push_back({h, std::move(texts_read_[h]), std::nullopt});
        for (const auto& t : texts)
            for (const auto& o : find_has_includes(t.text, t.file.string()))
                for (const auto& order : orders)
                    if (!t.cuda || *t.cuda == order.cuda)
                        look_for(o.header, has_include_chain(o, t.file, order));
    }

    // One `__has_include` through `chain`: every place it looked without
    // finding the header stays absent, and the file it found is keyed.
    void look_for(const std::string& header, const std::vector<fs::path>& chain) {
        for (const auto& dir : chain) {
            fs::path c = paths_.normal(dir / header);
            Presence there = presence(c);
            if (there == Presence::Absent) absent_.insert(c);
            if (there != Presence::File) continue;  // a directory is no header: look on
            if (seen_.insert(c).second && !inputs_.count(c) && !path_is_under(c, build_dir_) &&
                !is_runtime(c) && !is_toolchain_header(c, in_))
                key_file(c, false);
            return;
        }
    }

    // The set, or the first dependency that could not be read.
    std::expected<DependencySet, Error> finish() {
        if (error_) return std::unexpected(std::move(*error_));
        for (const auto& a : absent_) out_.direct.must_not_exist.push_back(anchored(a));
        return std::move(out_);
    }

  private:
    // Runtime headers may be reported through the plain-named link nvcc was
    // given (toolchain/safe_paths.hpp): compare real paths for those. They,
    // and the handlers' support object, are covered by bekc's version.
    // Resolved once per directory: hundreds of headers share a few dozen.
    bool is_runtime(const fs::path& p) {
        return path_is_under(p, runtime_root_) ||
               path_is_under(real_paths_.resolve(p), runtime_root_);
    }

    // A file outside the base that the compilers reached through it by a
    // relative path (`#include "../common/val.h"`, `-I ../common`) is
    // recorded as <base>/../common/val.h, so that another checkout checks its
    // own ../common, not this one's. Directories so reached: relative_roots_.
    // `normal`: where `spelled` leads (PhysicalPaths).
    bool spelled_through_base(const fs::path& spelled, const fs::path& normal) const {
        const std::string& base = in_.base.dir();
        const std::string& s = spelled.native();
        return !base.empty() && s.size() > base.size() + 1 &&
               s.compare(0, base.size(), base) == 0 && s[base.size()] == '/' &&
               !path_is_under(normal, base);
    }
    // Relative to the base's real path: "<base>/.." leaves that, as the
    // kernel reads it.
    fs::path anchored(const fs::path& p) const {
        for (const auto& r : relative_roots_)
            if (path_is_under(p, r))
                return fs::path(in_.base.dir()) / p.lexically_relative(real_base_);
        return p;
    }

    // Objects a compiler driver links and deletes right after (g++'s
    // /tmp/cc*.o, nvcc's /tmp/tmpxft_*): directly in the system's temporary
    // directory, or the tools' $TMPDIR.
    bool is_driver_temporary(const fs::path& p) {
        fs::path dir = p.parent_path();
        if (dir == fs::path("/tmp")) return true;
        return in_.env.tmpdir && dir == paths_.normal(*in_.env.tmpdir);
    }

    // One read per file: both digests, and the bytes of the user's headers,
    // whose __has_include add_has_includes looks at.
    // `spelled`: the path as the compiler reached `p`, when it did through a
    // link followed by ".." (src/../x.h, src a link). The direct record then
    // also checks that spelling, which the kernel resolves through the link
    // as it points at each lookup: a link pointed elsewhere leads to another
    // file, and so to a miss.
    void key_file(const fs::path& p, bool keep_text, const fs::path& spelled = {}) {
        auto digest = digest_file(p, keep_text);
        if (!digest) {
            if (!error_)
                error_ = Error::make(ErrorKind::Source, "cannot read dependency " + p.string() +
                                                            ": " + digest.error().message);
            return;
        }
        const fs::path recorded = anchored(p);
        out_.hashed.emplace_back(recorded.string(), digest->sha256);
        out_.direct.dependencies.push_back(
            {recorded, digest->sha256, digest->stat, digest->xxh128});
        if (!spelled.empty() && spelled.lexically_normal() != p)
            out_.direct.dependencies.push_back(
                {spelled, digest->sha256, digest->stat, digest->xxh128});
        if (digest->changed && !out_.changed_while_read) out_.changed_while_read = p.string();
        if (keep_text) texts_read_[p] = std::move(digest->text);
    }

    // The linker's --dependency-file names paths escaped or not: the
    // spelling that exists.
    std::vector<fs::path> linker_reported_files(const std::vector<LinkerDependency>& link) {
        std::vector<fs::path> files;
        for (const auto& l : link) {
            fs::path written = paths_.normal(l.as_written);
            fs::path unescaped = paths_.normal(l.unescaped);
            files.push_back(presence(written) == Presence::Absent &&
                                    presence(unescaped) != Presence::Absent
                                ? unescaped
                                : written);
        }
        return files;
    }

    const BuildInputs& in_;
    const std::string& multiarch_;
    fs::path build_dir_, runtime_root_, runtime_dir_;
    RealPaths real_paths_;
    // Every path is made absolute and normal by it, as the kernel opens it.
    PhysicalPaths paths_;
    fs::path real_base_;
    std::vector<fs::path> relative_roots_;
    std::set<fs::path> inputs_, seen_, absent_;
    std::map<fs::path, std::string> texts_read_;
    // recorded_: keyed headers; runtime_used_: bekc's runtime headers read;
    // libraries_: what the linker read that is not bekc's.
    std::vector<fs::path> recorded_, runtime_used_, user_headers_, libraries_;
    DependencySet out_;
    std::optional<Error> error_;  // the first dependency that could not be read
};

}  // namespace

std::expected<DependencySet, Error> classify_dependencies(const ReportedDependencies& reported,
                                                          const BuildInputs& in,
                                                          const std::string& multiarch,
                                                          const fs::path& runtime_include,
                                                          const fs::path& build_dir) {
    Classifier c(in, multiarch, runtime_include, build_dir);
    c.add_compiled(reported.compile);
    LinkerSearch search = linker_search(in.flags, in.env, multiarch);
    c.add_linked(reported, search);
    std::vector<SearchOrder> orders = c.search_orders();
    c.add_shadows(orders, search);
    c.add_has_includes(orders);
    return c.finish();
}

namespace {

bool is_system_path(const fs::path& p, const std::string& multiarch) {
    return is_system_header(p, multiarch) || is_system_library(p);
}

}  // namespace

DirectInputs portable_dependencies(const DirectInputs& direct, const BuildInputs& in,
                                   const std::string& multiarch) {
    DirectInputs kept;
    kept.key = direct.key;
    kept.examined_ns = direct.examined_ns;
    for (const auto& d : direct.dependencies)
        if (!is_system_path(d.path, multiarch)) kept.dependencies.push_back(d);
    for (const auto& p : direct.must_not_exist)
        if (!is_system_path(p, multiarch) && !is_toolchain_header(p, in))
            kept.must_not_exist.push_back(p);
    return kept;
}

}  // namespace bekc
