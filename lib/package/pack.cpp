#include "package/pack.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "driver/fatal.hpp"
#include "package/child_builds.hpp"
#include "plan/arch.hpp"
#include "plan/target.hpp"
#include "store/cache_export.hpp"
#include "store/cache_layers.hpp"
#include "store/layout.hpp"
#include "store/pack_archive.hpp"
#include "store/pack_marker.hpp"
#include "store/size.hpp"
#include "store/target_file.hpp"
#include "toolchain/machine.hpp"
#include "toolchain/nvcc_search.hpp"
#include "toolchain/tool_versions.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/version.hpp"

namespace bekc {

namespace {

// JAX's CUDA builds run on compute capability 5.2 and newer.
constexpr int kOldestJaxArch = 52;

// A build a source put in the pack, and the cache it is in.
struct Packed {
    PortableBuild build;
    fs::path from;
    std::string name;  // the module's name, for the marker
};

// A cache with a marker: an older bekc's has no portable records to pack.
bool is_cache_dir(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p / kMarkerFile, ec) && is_bekc_cache(p);
}

// The module names of a cache's entries, from their manifests.
std::string entry_name(const Cache& cache, const std::string& key) {
    auto text = cache.dir().read(CacheLayout::entry(key) / kManifestFile, 1 << 20);
    if (!text) return "";
    auto j = parse_json(*text);
    return j && j->is_object() ? j->value("name", std::string()) : std::string();
}

// The builds a child `bekc build <package>` or `bekc replay` reported: its
// --json object's "modules" (a package) or "loads" (a replay), each with
// "key" and "portable_key".
std::vector<Packed> reported_builds(const nlohmann::json& j, const fs::path& cache_root) {
    std::vector<Packed> out;
    if (!j.is_object()) return out;
    for (const char* list : {"modules", "loads"}) {
        auto it = j.find(list);
        if (it == j.end() || !it->is_array()) continue;
        for (const auto& m : *it) {
            if (!m.is_object()) continue;
            std::string key = m.value("key", ""), pk = m.value("portable_key", "");
            if (is_valid_key(key) && is_valid_key(pk))
                out.push_back({{pk, key}, cache_root, m.value("name", m.value("module", ""))});
        }
    }
    return out;
}

// Builds `source` (a package directory or a recording) for `archs` into the
// own cache with a child bekc, and returns what it built.
std::vector<Packed> build_source(const PackOptions& o, const fs::path& source, bool package,
                                 const std::string& archs, const fs::path& cache_root,
                                 BuildContext& ctx, const ChildTraces& traces,
                                 std::vector<Command>& children) {
    const fs::path self = own_executable();
    Command c;
    c.argv = {self.string(),   package ? "build" : "replay",
              source.string(), "--arch=" + archs,
              "--json",        "--cache-dir=" + cache_root.string()};
    if (o.jobs > 0) c.argv.push_back("-j" + std::to_string(o.jobs));
    if (auto file = traces.file(children.size())) c.argv.push_back("--trace=" + *file);
    c.description = std::string(package ? "build " : "replay ") + source.string();
    children.push_back(c);
    if (!o.quiet) std::fprintf(stderr, "bekc: building %s for %s\n", source.c_str(), archs.c_str());
    ProcessResult r = run_child(ctx.runner, c, traces, source.filename().string());
    nlohmann::json j = child_json(r);
    if (!r.ok() || !j.is_object()) {
        std::fputs(child_messages(r).c_str(), stderr);
        fatal(Error::at(ErrorKind::Source, source.string(), 0,
                        std::string(package ? "the package" : "the recording") +
                            " did not build (" + r.describe() + "); nothing was packed"));
    }
    if (o.verbose) std::fputs(child_messages(r).c_str(), stderr);
    return reported_builds(j, cache_root);
}

// Every build the sources give, each once.
std::vector<Packed> collect(const PackOptions& o, const fs::path& cache_root, BuildContext& ctx) {
    std::string archs = o.arch;
    std::vector<Packed> all;
    // --trace: each source's child writes its own, merged into the pack's.
    ChildTraces traces(ctx.trace, private_dir_places(cache_root, ctx));
    std::vector<Command> children;
    for (const auto& s : o.sources) {
        fs::path source = fs::absolute(s).lexically_normal();
        std::error_code ec;
        if (is_cache_dir(source)) {
            Cache from(source, {}, CacheAccess::ReadOnly);
            for (auto& b : portable_builds(from))
                all.push_back({b, source, entry_name(from, b.key)});
            continue;
        }
        bool package = fs::is_directory(source, ec);
        if (!package && !fs::is_regular_file(source, ec))
            fatal(Error::at(ErrorKind::Usage, s, 0,
                            "not a package directory, a recording of loads or a bekc cache"));
        if (archs.empty()) {
            auto nvcc = or_fatal(find_nvcc(NvccRequest{}, ctx.tools));
            archs = default_pack_archs(nvcc.tool, ctx.runner);
            if (archs.empty())
                fatal(Error::make(ErrorKind::Toolchain,
                                  nvcc.tool.path.string() +
                                      " --list-gpu-code named no architecture; pass --arch"));
        }
        for (auto& p : build_source(o, source, package, archs, cache_root, ctx, traces, children))
            all.push_back(std::move(p));
    }
    traces.merge(children);
    std::set<std::string> seen;
    std::vector<Packed> unique;
    for (auto& p : all)
        if (seen.insert(p.build.portable_key + p.build.key).second) unique.push_back(std::move(p));
    return unique;
}

// The marker's description of the pack.
nlohmann::json pack_info(const PackOptions& o, const std::vector<Packed>& packed,
                         const Cache& pack) {
    std::set<std::string> names, archs, cuda;
    for (const auto& p : packed) {
        if (!p.name.empty()) names.insert(p.name);
        auto t = read_target(pack.dir(), CacheLayout::entry(p.build.key));
        if (!t) continue;
        if (!t->cuda.empty()) cuda.insert(t->cuda);
        for (const auto& a : t->sass) archs.insert(a.sm());
    }
    return {{"name", o.name},
            {"version", o.version},
            {"bekc_version", std::string(kVersion)},
            {"cuda", cuda.empty() ? std::string() : *cuda.rbegin()},
            {"archs", std::vector<std::string>(archs.begin(), archs.end())},
            {"modules", std::vector<std::string>(names.begin(), names.end())}};
}

void check_options(const PackOptions& o) {
    if (o.sources.empty()) fatal(Error::make(ErrorKind::Usage, "name what to pack"));
    if (o.output.empty()) fatal(Error::make(ErrorKind::Usage, "-o is required"));
    if (o.format != "dir" && o.format != "tar" && o.format != "wheel")
        fatal(Error::make(ErrorKind::Usage, "--format " + o.format + ": use dir, tar or wheel"));
    if (std::string problem = pack_name_problem(o.name); !problem.empty())
        fatal(Error::make(ErrorKind::Usage, "--name '" + o.name + "': " + problem));
    if (o.format == "wheel")
        if (std::string problem = wheel_version_problem(o.version); !problem.empty())
            fatal(Error::make(ErrorKind::Usage, "--version '" + o.version + "': " + problem));
}

// The finished pack at `staging` as -o asks: the directory renamed, or a
// tarball or a wheel written from it (store/pack_archive.hpp) and the
// directory removed. Returns what was written.
fs::path deliver_pack(const PackOptions& o, const fs::path& staging, const fs::path& out,
                      BuildContext& ctx) {
    std::error_code ec;
    if (o.format == "dir") {
        fs::rename(staging, out, ec);
        if (ec)
            fatal(Error::make(ErrorKind::Cache, "cannot rename " + staging.string() + " to " +
                                                    out.string() + ": " + ec.message()));
        return out;
    }
    std::expected<fs::path, Error> written;
    if (o.format == "tar") {
        auto tar = resolve_named("tar", ctx.tools);
        if (!tar) fatal(Error::make(ErrorKind::Toolchain, "--format tar needs tar on PATH"));
        written = write_pack_tarball(staging, out, ctx.runner, *tar);
    } else {
        // The builder's C library is the oldest the pack's libraries run with.
        MachineTarget host = host_target();
        std::string glibc = host.glibc;
        std::replace(glibc.begin(), glibc.end(), '.', '_');
        fs::create_directories(out, ec);
        written = write_pack_wheel(
            staging, {o.name, o.version, "manylinux_" + glibc + "_" + host.machine}, out);
    }
    fs::remove_all(staging, ec);
    return or_fatal(std::move(written));
}

}  // namespace

std::string default_pack_name(const std::string& output) {
    std::string name = fs::path(output).filename().string();
    name = name.substr(0, name.find('.'));
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    return name.empty() ? "pack" : name;
}

std::string pack_archs_from(const std::string& list_gpu_code) {
    std::vector<std::string> names;
    size_t at = 0;
    while (at < list_gpu_code.size()) {
        size_t end = list_gpu_code.find_first_of(" \t\r\n", at);
        if (end == std::string::npos) end = list_gpu_code.size();
        std::string word = list_gpu_code.substr(at, end - at);
        at = end + 1;
        if (!word.starts_with("sm_")) continue;
        auto archs = parse_arch_list(word);
        if (!archs || archs->size() != 1) continue;
        const Arch& a = archs->front();
        if (a.suffix.empty() && a.number >= kOldestJaxArch) names.push_back(a.sm());
    }
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
    return out;
}

std::string default_pack_archs(const Tool& nvcc, Runner& runner) {
    Command c;
    c.argv = {nvcc.path.string(), "--list-gpu-code"};
    ProcessResult r = runner.run_one(c);
    return r.ok() ? pack_archs_from(r.output) : std::string();
}

int run_pack(const PackOptions& o, BuildContext& ctx) {
    check_options(o);
    const fs::path cache_root = or_fatal(resolve_cache_root(o.cache_dir, ctx.env));
    const fs::path out = fs::absolute(o.output).lexically_normal();
    std::error_code ec;
    if (o.format != "wheel" && fs::exists(fs::symlink_status(out, ec)))
        fatal(Error::at(ErrorKind::Usage, out.string(), 0,
                        "exists already; remove it or choose another -o"));
    if (o.format == "wheel") fs::create_directories(out, ec);
    std::vector<Packed> packed = collect(o, cache_root, ctx);
    if (packed.empty()) fatal(Error::make(ErrorKind::Usage, "the sources gave nothing to pack"));
    // Built beside -o under a temporary name, renamed whole when complete.
    const fs::path staging =
        (o.format == "wheel" ? out / o.name : out).string() + ".tmp." + unique_suffix();
    // A pack cut short leaves nothing beside -o (the directory is bekc's own).
    struct Discard {
        const fs::path& dir;
        ~Discard() {
            std::error_code ignored;
            fs::remove_all(dir, ignored);
        }
    } discard{staging};
    Cache pack(staging);
    for (const auto& p : packed)
        or_fatal(copy_build(Cache(p.from, {}, CacheAccess::ReadOnly), pack, p.build));
    // Only entries and records: the staging directories' parent goes.
    or_fatal(pack.dir().remove_tree(CacheLayout::tmp()));
    nlohmann::json info = pack_info(o, packed, pack);
    or_fatal(pack.store_pack_info(info));
    uint64_t bytes = pack.stats() ? pack.stats()->bytes : 0;
    const fs::path written = deliver_pack(o, staging, out, ctx);
    std::string archs;
    for (const auto& a : info["archs"]) archs += (archs.empty() ? "" : ",") + a.get<std::string>();
    if (!o.quiet)
        std::fprintf(stderr, "bekc: pack %s %s: %zu modules for %s, %s in %s\n", o.name.c_str(),
                     o.version.c_str(), info["modules"].size(),
                     archs.empty() ? "the host" : archs.c_str(), format_size(bytes).c_str(),
                     written.c_str());
    if (o.json)
        std::puts(dump_json(nlohmann::json{{"pack", written.string()}, {"info", info}}).c_str());
    return kExitOk;
}

}  // namespace bekc
