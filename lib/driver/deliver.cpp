#include "driver/phases.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "driver/fatal.hpp"
#include "store/cache_layers.hpp"
#include "store/layout.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// `-o DIR`: the library and the chosen manifest at a stable path. A hard link
// when the cache is on the same filesystem and `link`, else a copy; both
// appear by rename, manifest last, so a reader of DIR never sees a manifest
// without its library. A read-only cache's library is copied: a link would
// change its ctime, and so its stamp.
Delivered place_outputs(const fs::path& dir, const Delivered& from, bool link) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fatal(Error::make(ErrorKind::Usage, "-o " + dir.string() + ": " + ec.message()));
    fs::path lib = dir / from.library.filename();
    fs::path tmp = dir / (".bekc." + unique_suffix());
    if (link) fs::create_hard_link(from.library, tmp, ec);
    if (!link || ec) {
        ec.clear();
        fs::copy_file(from.library, tmp, ec);
    }
    if (ec || ::rename(tmp.c_str(), lib.c_str()) != 0) {
        fs::remove(tmp, ec);
        fatal(Error::make(ErrorKind::Cache, "cannot place " + lib.string()));
    }
    // rename(2) between two links to one inode succeeds and does nothing,
    // leaving the temporary link behind: remove it (a no-op otherwise).
    fs::remove(tmp, ec);
    auto manifest = read_file(from.manifest);
    if (!manifest) fatal(std::move(manifest.error().as(ErrorKind::Cache)));
    if (auto w = write_atomic(dir / "manifest.json", *manifest); !w)
        fatal(std::move(w.error().as(ErrorKind::Cache).within("-o")));
    return {dir / "manifest.json", lib};
}

// Make syntax; spaces and '$' escaped as Make wants them.
std::string make_escape(const std::string& path) {
    std::string out;
    for (char c : path) {
        if (c == ' ' || c == '#') out += '\\';
        if (c == '$') out += '$';
        out += c;
    }
    return out;
}

void write_depfile(const fs::path& file, const Cache& cache, const Entry& entry,
                   const std::vector<SourceFile>& inputs, const fs::path& target,
                   const BaseDir& base) {
    std::vector<std::string> prereqs;
    for (const auto& f : inputs) prereqs.push_back(physical_normal(f.path).string());
    if (auto text = cache.dir().read(CacheLayout::entry(entry.key) / kDependenciesFile)) {
        auto j = parse_json(*text).value_or(nullptr);
        if (j.is_array())
            for (const auto& h : j)
                if (h.is_string())
                    if (auto here = base.show(h.get<std::string>())) prereqs.push_back(*here);
    }
    std::string out = make_escape(target.string()) + ":";
    for (const auto& p : prereqs) out += " \\\n  " + make_escape(p);
    out += "\n";
    // Every header also gets an empty rule, so deleting one does not break make.
    for (size_t i = inputs.size(); i < prereqs.size(); ++i) {
        out += '\n';
        out += make_escape(prereqs[i]);
        out += ":\n";
    }
    // Replacing the path by rename would replace a device or a FIFO itself.
    if (auto regular = check_writable_regular(file); !regular)
        fatal(std::move(regular.error().as(ErrorKind::Usage).within("--depfile")));
    if (auto w = write_atomic(file, out); !w)
        fatal(std::move(w.error().as(ErrorKind::Cache).within("--depfile")));
}

// With -v or --explain-key: which cache served the hit.
void report_hit(const BuildOptions& o, const Cache& cache, const Reporter& report) {
    if (!o.verbose && !o.explain_key) return;
    std::string line = "cache hit in " +
                       std::string(cache.read_only() ? "the read-only cache " : "") +
                       cache.path().string();
    // The own cache, read-only here with no other to build into: hits are
    // served as they are, and what a hit would record is skipped.
    if (!cache.read_only() && read_only_here(cache.path()))
        line += " (read-only here: serving hits from it, writing nothing)";
    if (o.verbose)
        report.info(line);
    else
        report.print("bekc: " + line + "\n");
}

}  // namespace

Delivered deliver(const BuildInputs& in, const BuildOptions& o, const Cache& cache, const Entry& e,
                  bool hit, const Reporter& report) {
    if (hit) report_hit(o, cache, report);
    Delivered d{e.manifest(!o.no_cuda_graph), e.library};
    if (o.output_dir) d = place_outputs(fs::path(*o.output_dir), d, !cache.read_only());
    if (o.depfile) write_depfile(fs::path(*o.depfile), cache, e, in.files, d.manifest, in.base);
    return d;
}

}  // namespace bekc
