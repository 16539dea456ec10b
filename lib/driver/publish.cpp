#include "driver/phases.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "driver/fatal.hpp"
#include "graph/keys.hpp"
#include "plan/arch.hpp"
#include "portable/portable.hpp"
#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "store/manifest.hpp"
#include "store/runtime_headers.hpp"
#include "store/target_file.hpp"
#include "toolchain/compiler_env.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// Fills the staging directory of the entry `key`: the library built at
// `built`, the manifests (the one with CUDA graphs last) and the user's
// headers for --depfile.
std::expected<void, Error> stage_entry(const Staging& staging, const BuildInputs& in,
                                       const fs::path& built, const std::string& key,
                                       const DependencySet& deps) {
    auto sha = sha256_file(built);
    if (!sha) return std::unexpected(sha.error());
    const LibraryTarget target = library_target(in, built);
    if (auto w = staging.write(kTargetFile, render_target(target)); !w) return w;
    if (auto moved = staging.move_in(in.library_file(), built); !moved) return moved;
    ManifestOutput m{key, *sha};
    ManifestInputs manifest = manifest_inputs(in);
    // Every architecture the library carries code for: --arch's, and those
    // the user's own nvcc options (or $NVCC_APPEND_FLAGS) asked for.
    manifest.archs = arch_union(manifest.archs, target.sass);
    if (auto w = staging.write(kManifestNoGraphFile, render_manifest(manifest, m, false)); !w)
        return w;
    // Relative to the base directory, for --depfile in any checkout.
    nlohmann::json headers = nlohmann::json::array();
    for (const auto& h : deps.user_headers) headers.push_back(in.base.hide(h));
    if (auto w = staging.write(kDependenciesFile, dump_json(headers)); !w) return w;
    return staging.write(kManifestFile, render_manifest(manifest, m, true));
}

// Whether nvcc writes device line or debug information (-lineinfo, -G, and
// ptxas's own option), which names the wrapper in bekc's private build
// directory, new for each build: cicc's file table and fatbinary's --ident
// take the path as it is, and no prefix map reaches them.
bool device_code_names_build_dir(const BuildInputs& in) {
    if (!in.nvcc) return false;
    for (const auto& f : nvcc_env_flags(in.env).around(in.flags.cuda_flags))
        if (f == "-G" || f == "--device-debug" || f.find("lineinfo") != std::string::npos ||
            f.find("line-info") != std::string::npos)
            return true;
    return false;
}

// --force rebuilt an entry that existed under the same key: the same
// inputs must give the same library, or the key missed one of them.
// Both digests are the seals': publishing hashed the new library.
void check_forced_rebuild(const BuildInputs& in, const BuildOutcome& outcome,
                          const std::string& key, const Reporter& report) {
    if (!outcome.replaced_sha256) return;
    const std::string& now = outcome.entry.library_sha256;
    if (now != *outcome.replaced_sha256 && device_code_names_build_dir(in))
        report.info("--force rebuilt cache entry " + key +
                    " and the library differs from the one it replaced: nvcc's device line "
                    "and debug information (-lineinfo, -G) name bekc's private build "
                    "directory, new for each build (docs/cache.md)");
    else if (now != *outcome.replaced_sha256)
        report.warn("--force rebuilt cache entry " + key +
                    " and the library differs from the one it replaced (SHA-256 " +
                    outcome.replaced_sha256->substr(0, 16) + "... before, " + now.substr(0, 16) +
                    "... now) although the key is unchanged: an input bekc does not "
                    "key changed, or the compiler is not deterministic; please report it");
}

}  // namespace

// The first dependency or flag file written since the compile started, if any.
// File timestamps come from a coarse clock that can only lag, so a file
// written before the start never looks newer; sources written just before
// bekc runs (as load_cpp_inline does) are not flagged. A dependency is
// judged by the stat classify_dependencies took when it read the bytes that
// were keyed (a later write changes nothing keyed), or flagged when it
// changed while being read.
std::optional<std::string> changed_during_build(const DependencySet& deps,
                                                const std::vector<FlagFile>& flag_files,
                                                int64_t start_ns) {
    auto recent = [&](const std::optional<FileStat>& st) {
        return !st || std::max(st->mtime_ns, st->ctime_ns) >= start_ns;
    };
    if (deps.changed_while_read) return deps.changed_while_read;
    for (const auto& d : deps.direct.dependencies)
        if (recent(d.stat ? d.stat : stat_file(d.path))) return d.path.string();
    // A header that would be found first, created while the compiler ran:
    // it may have come after the compiler looked.
    for (const auto& p : deps.present_shadows)
        if (recent(stat_file(p))) return p.string();
    // Read before the lock and the remote lookup, and again by the tools.
    return flag_file_changed(flag_files, start_ns);
}

void keep_under_limit(Cache& cache, const Entry& published, const std::string& direct_key,
                      const EnvLookup& env, const Reporter& report) {
    auto limit = cache.size_limit(env);
    if (!limit) return report.warn(limit.error().message);
    if (auto kept = cache.enforce_limit(published, direct_key, limit->bytes); !kept)
        report.warn(kept.error().message);
}

Published publish(const BuildInputs& in, const BuildOptions& o, const PlannedBuild& planned,
                  const Executed& built, Cache& cache, std::optional<RemoteCache>& remote,
                  BuildContext& ctx, const Reporter& report) {
    const std::string& direct_key = planned.direct_key;
    DependencySet deps =
        or_fatal(classify_dependencies(built.dependencies, in, built.multiarch,
                                       runtime_include_dir(in.cache_root), built.dir.path()));
    KeyBuilder full = full_key_builder(direct_key, deps, in.base);
    if (o.explain_key) std::fputs(full.explain().c_str(), stdout);
    Published p;
    p.key = full.digest();
    deps.direct.key = p.key;
    // A file saved while the compiler ran may be newer than what was compiled,
    // and its new bytes are in the key: this result is used, never cached.
    p.changed = changed_during_build(deps, in.flag_files, built.start_ns);
    if (p.changed) {
        report.warn(*p.changed + " changed during the build; the result is used but not cached");
        p.key =
            KeyBuilder("uncached").add("build_key", p.key).add("nonce", unique_suffix()).digest();
    }
    fs::path library = built.dir.path() / in.library_file();
    auto outcome = cache.get_or_build(
        p.key, [&](const Staging& s) { return stage_entry(s, in, library, p.key, deps); }, o.force);
    if (!outcome) fatal(std::move(outcome.error()));
    check_forced_rebuild(in, *outcome, p.key, report);
    if (!outcome->repaired.empty())
        report.warn("replaced a corrupt cache entry: " + outcome->repaired);
    p.entry = outcome->entry;
    if (p.changed) return p;
    if (auto r = cache.record_direct(direct_key, deps.direct, in.base); !r)
        report.warn("could not record dependencies for fast hits: " + r.error().message);
    if (!outcome->hit) keep_under_limit(cache, p.entry, direct_key, ctx.env, report);
    if (remote) remote->publish(cache, p.entry, direct_key, deps.direct, in.base);
    // After the remote's entry: a reader who finds the record finds it.
    record_portable(cache, planned.portable_key, deps.direct, in, built.multiarch, remote, p.entry,
                    report);
    return p;
}

}  // namespace bekc
