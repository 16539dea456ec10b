// Where things live in the cache directory: the one place that knows. Every
// path below is relative to the root and reached through store/cache_dir.hpp,
// which follows no link. See docs/cache.md.
//
//   <root>/
//     bekc-cache.json         the marker: proves the tree is a bekc cache
//                             before maintenance deletes anything; also holds
//                             the configured size limit ("max_size")
//     CACHEDIR.TAG            marks the tree as a cache for backup tools
//     entries/ab/cdef…/       one published entry per key ("ab" = first two
//                             hex digits of the key, "cdef…" = the rest)
//       lib<name>.so          the library
//       manifest.json         manifest naming the command-buffer symbols
//       manifest.no-cuda-graph.json
//       dependencies.json     the user headers, for --depfile
//       stamp.json            the seal: SHA-256 of every other file, and the
//                             library's size, mtime and XXH3-128
//       target.json           where the library runs (store/target_file.hpp):
//                             its SASS and PTX, the CUDA release, the machine
//       last-use              empty; its mtime is the entry's last hit (LRU)
//     direct/ab/cdef….rec     direct-mode records for one direct key
//                             (binary: store/direct_record.hpp)
//     portable/ab/cdef….rec   the same records for one portable key: the
//                             inputs and options, without the toolchain
//                             (graph/keys.hpp, portable_key_builder), for a
//                             hit where no compiler is found
//     locks/ab/cdef….lock     flock(2) files, one per key being built
//     steps/ab/cdef…/         the result of one build step (an nvcc phase:
//                             cicc, ptxas, the host compile) by the key of
//                             what it reads (store/step_cache.hpp): its
//                             outputs as 0, 1, …, meta.json, stamp.json,
//                             last-use
//     runtime/<h>/include/    the runtime headers of one bekc header set,
//                             sealed by runtime/<h>/include/stamp.json
//     runtime/<h>/obj/<c>/    bekc_rt.o for one host compiler, sealed by its
//                             stamp.json; built under locks/runtime.<h>.<c>.lock
//     tools.json, gpus.json   memos: tool versions, detected GPUs
//     timings.json            memo: how long each input took to compile last
//     size.json               the running size estimate for the size limit
//     stats.json              hit and miss counters (`bekc cache stats`),
//                             updated under locks/stats.lock
//     history/ab/cdef….json   the direct key record of the last build of one
//                             set of inputs (module name + input paths), so
//                             a miss can say which key part changed
//     bekc.conf               the cache's configuration (config/settings.hpp);
//                             the user's, never written or removed by bekc
//     src/<sha256>/           the Python loader's inline sources
//                             (python/bekc/_compat.py writes them, without
//                             following links; `clear_cache()` removes these
//                             names only)
//     tmp/                    staging "<key>.<suffix>", "runtime.<suffix>",
//                             "scratch.<suffix>", and "trash.<suffix>" on the
//                             way out; <suffix> is "host.pid.16 hex digits";
//                             "builds.<uid>", a user's private build
//                             directories when /tmp and $TMPDIR offer none
//                             (util/fs.hpp, private_user_dir)
//
// Everything under entries/, steps/ and runtime/ appears by rename(2) of a complete
// directory from tmp/, which is on the same filesystem, so readers never see
// a partial one.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/cache_dir.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

inline constexpr std::string_view kManifestFile = "manifest.json";
inline constexpr std::string_view kManifestNoGraphFile = "manifest.no-cuda-graph.json";
inline constexpr std::string_view kDependenciesFile = "dependencies.json";
inline constexpr std::string_view kStampFile = "stamp.json";
inline constexpr std::string_view kTargetFile = "target.json";
inline constexpr std::string_view kLastUseFile = "last-use";
inline constexpr std::string_view kMarkerFile = "bekc-cache.json";
inline constexpr std::string_view kCacheDirTagFile = "CACHEDIR.TAG";

// True for what KeyBuilder::digest() produces: 64 lowercase hex digits.
// Keys become path components, so nothing else may get through.
bool is_valid_key(std::string_view key);
// True for n lowercase hex digits.
bool is_hex(std::string_view s, size_t n);

// A folder of record files named by a key, and how their names end.
struct RecordFolder {
    fs::path dir;
    std::string_view extension;
};

class CacheLayout {
  public:
    explicit CacheLayout(fs::path root, CacheAccess access = CacheAccess::ReadWrite)
        : dir_(std::move(root), access) {}

    const fs::path& root() const { return dir_.root(); }
    const CacheDir& dir() const { return dir_; }
    // Absolute form of a relative cache path, for messages and compilers.
    fs::path path(const fs::path& rel) const { return dir_.path(rel); }

    static fs::path entries() { return "entries"; }
    static fs::path direct() { return "direct"; }
    static fs::path portable() { return "portable"; }
    // How the names of direct and portable records end (binary,
    // store/direct_record.hpp).
    static constexpr std::string_view kRecordExtension = ".rec";
    // Every folder of record files named by a key, with how their names end:
    // the direct and portable records, and the build history.
    static std::vector<RecordFolder> record_folders() {
        return {{direct(), kRecordExtension}, {portable(), kRecordExtension}, {history(), ".json"}};
    }
    // The direct and portable records of an older bekc, JSON files named
    // "….json" (record formats 1 and 2), which this one never reads: clear
    // and prune remove them with the others, verify as records of no use.
    static std::vector<RecordFolder> old_record_folders() {
        return {{direct(), ".json"}, {portable(), ".json"}};
    }
    static fs::path locks() { return "locks"; }
    static fs::path tmp() { return "tmp"; }
    static fs::path runtime() { return "runtime"; }
    static fs::path steps() { return "steps"; }

    // These throw InternalError for an invalid key.
    static fs::path entry(std::string_view key);
    static fs::path step(std::string_view key);
    static fs::path lock(std::string_view key);
    static fs::path direct_record(std::string_view direct_key);
    static fs::path portable_record(std::string_view portable_key);
    // A lock for something that is not a keyed entry ("runtime.<h>.<c>").
    static fs::path named_lock(std::string_view name);

    // runtime/<h>/include and runtime/<h>/obj/<c>; `h` and `c` are 16 hex digits.
    static fs::path runtime_include(std::string_view headers_hash);
    static fs::path runtime_object_dir(std::string_view headers_hash, std::string_view compiler);
    // The locks each of those is published under (locks/runtime.<h>[.<c>].lock).
    static fs::path runtime_include_lock(std::string_view headers_hash);
    static fs::path runtime_object_lock(std::string_view headers_hash, std::string_view compiler);
    static fs::path tool_memo() { return "tools.json"; }
    static fs::path gpu_memo() { return "gpus.json"; }
    static fs::path timing_memo() { return "timings.json"; }
    static fs::path size_state() { return "size.json"; }
    static fs::path stats_file() { return "stats.json"; }
    // One byte per build appended by each build, folded into stats.json
    // by `cache stats` or when it grows: a hit takes no lock for its count.
    static fs::path stats_tally(std::string_view counter) {
        return "stats." + std::string(counter) + ".tally";
    }
    static fs::path history() { return "history"; }
    // The cache's own configuration (config/settings.hpp): the user's.
    static fs::path config_file() { return "bekc.conf"; }
    // The Python loader's inline sources: src/<sha256 of the text>/.
    static fs::path inline_sources_dir() { return "src"; }
    static bool is_inline_source_name(std::string_view name);
    // history/ab/cdef….json for an inputs id (64 hex digits); throws like entry().
    static fs::path history_record(std::string_view inputs_id);
    // Every small JSON object at the root that `cache clear` removes: the
    // memos and the size state.
    static std::vector<fs::path> root_memos() {
        return {tool_memo(), gpu_memo(), timing_memo(), size_state()};
    }
    // Every small JSON object at the root that `cache verify` parses: the
    // memos and the counters, which `clear` keeps (as ccache -C does).
    static std::vector<fs::path> root_json_files() {
        auto all = root_memos();
        all.push_back(stats_file());
        return all;
    }

    // tmp/builds.<uid>: the last place for a user's build directories.
    static fs::path private_builds(unsigned uid) {
        return tmp() / ("builds." + std::to_string(uid));
    }

    // Fresh names under tmp/.
    static fs::path staging(std::string_view what);  // what: a key, "runtime", "scratch"
    static fs::path trash();

    // The key an entries/ab/<rest> directory or a locks/ab/<rest>.lock or
    // direct/ab/<rest>.rec file stands for, from its two last components, or
    // "" when they are not one of ours.
    static std::string key_of(std::string_view fan, std::string_view name,
                              std::string_view extension);
    // Whether `name` (in tmp/) is one of the names bekc gives its temporaries.
    static bool is_own_temp(std::string_view name);
    // The key a staging name belongs to, or "".
    static std::string staging_key(std::string_view name);
    // Whether `name` is a temporary of util/fs write_atomic ("X.tmp.<suffix>").
    static bool is_write_temp(std::string_view name);

  private:
    CacheDir dir_;
};

// `getenv` is util/env.hpp's lookup function; tests pass a stub.
// $BEKC_CACHE_DIR, else $XDG_CACHE_HOME/bekc (when absolute, as the XDG spec
// requires), else $HOME/.cache/bekc. `--cache-dir` overrides all of these
// and is the caller's business. Fails only when HOME is unset too.
std::expected<fs::path, Error> default_cache_dir(const EnvLookup& getenv);

// The cache root every command uses, absolute: `flag` (--cache-dir) when
// given, else default_cache_dir(getenv): a Usage error when there is none.
std::expected<fs::path, Error> resolve_cache_root(const std::optional<std::string>& flag,
                                                  const EnvLookup& getenv);

}  // namespace bekc
