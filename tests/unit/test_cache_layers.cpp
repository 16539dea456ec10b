// Layered caches (store/cache_layers.hpp): which caches a build looks in and
// in what order, which read-only ones it skips and why, and that a read-only
// cache serves hits while nothing in it is ever written (store/cache_dir.hpp,
// CacheAccess::ReadOnly).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <tuple>

#include "../helpers/env.hpp"
#include "../helpers/fake_entry.hpp"
#include "../helpers/temp_dir.hpp"
#include "store/cache.hpp"
#include "store/cache_layers.hpp"
#include "util/version.hpp"

using namespace bekc;
using test::env_of;
using test::fake_key;

namespace {

// Every path under `root` (links not followed) with its mtime, ctime and
// size: what a write of any kind changes.
using TreeState = std::map<fs::path, std::tuple<int64_t, int64_t, int64_t>>;

TreeState layer_tree_state(const fs::path& root) {
    TreeState out;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
         ++it) {
        struct stat st;
        REQUIRE(::lstat(it->path().c_str(), &st) == 0);
        out[it->path()] = {st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                           st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec, st.st_size};
    }
    return out;
}

// A cache at `root` with one entry for `key` and the direct record that
// names it under `direct_key`; the entry.
Entry layer_with_entry(const fs::path& root, const std::string& key, const std::string& direct_key,
                       const fs::path& header) {
    Cache cache(root);
    auto built = cache.get_or_build(key, [&](const Staging& staging) -> std::expected<void, Error> {
        test::write_fake_entry(staging, key, "k", std::string(4096, 'x'));
        return {};
    });
    REQUIRE(built.has_value());
    REQUIRE(cache.record_direct(direct_key, DirectInputs{key, {{header, ""}}, {}}).has_value());
    return built->entry;
}

}  // namespace

TEST_CASE("a read-only cache serves a hit and writes nothing", "[cache][layers]") {
    test::TempDir tmp;
    test::write_file(tmp / "a.h", "#define A 1\n");
    const std::string key = fake_key("layer-hit"), direct_key = fake_key("layer-direct");
    Entry entry = layer_with_entry(tmp / "team", key, direct_key, tmp / "a.h");
    // Copied, touched or hard-linked: a writable cache would refresh the
    // library's stamp on the next hit.
    fs::last_write_time(entry.library, fs::last_write_time(entry.library) - std::chrono::hours(1));
    const TreeState before = layer_tree_state(tmp / "team");

    Cache layer(tmp / "team", {}, CacheAccess::ReadOnly);
    CHECK(layer.read_only());
    DirectLookup d = layer.lookup_direct(direct_key);
    REQUIRE(d.key == key);
    auto hit = layer.lookup(key);
    REQUIRE(hit.has_value());
    CHECK(hit->library == entry.library);
    CHECK(layer_tree_state(tmp / "team") == before);
}

TEST_CASE("a damaged entry in a read-only cache is a miss and stays as it is", "[cache][layers]") {
    test::TempDir tmp;
    test::write_file(tmp / "a.h", "#define A 1\n");
    const std::string key = fake_key("layer-damaged");
    Entry entry = layer_with_entry(tmp / "team", key, fake_key("d"), tmp / "a.h");
    fs::resize_file(entry.library, 100);
    const TreeState before = layer_tree_state(tmp / "team");

    Cache layer(tmp / "team", {}, CacheAccess::ReadOnly);
    auto miss = layer.lookup(key);
    REQUIRE_FALSE(miss.has_value());
    CHECK(miss.error().kind == Miss::Kind::Corrupt);
    CHECK(fs::exists(entry.library));
    CHECK(layer_tree_state(tmp / "team") == before);  // no lock taken, nothing removed
}

TEST_CASE("every write through a read-only cache is refused before it is tried",
          "[cache][layers]") {
    test::TempDir tmp;
    test::write_file(tmp / "a.h", "#define A 1\n");
    const std::string key = fake_key("layer-refused");
    Entry entry = layer_with_entry(tmp / "team", key, fake_key("d"), tmp / "a.h");
    const TreeState before = layer_tree_state(tmp / "team");

    const CacheDir dir(tmp / "team", CacheAccess::ReadOnly);
    const fs::path rel = entry.library.lexically_relative(tmp / "team");
    auto refused = [](const std::expected<void, Error>& r) {
        REQUIRE_FALSE(r.has_value());
        CHECK_THAT(r.error().message, Catch::Contains("read-only cache"));
    };
    refused(dir.write("tools.json", "{}"));
    refused(dir.write("new/dir/file", "x"));
    refused(dir.make_dir("tmp/x"));
    refused(dir.rename(rel, "moved.so"));
    refused(dir.remove_file(rel));
    refused(dir.remove_tree("entries"));
    CHECK_FALSE(dir.append("stats.misses.tally", "x").has_value());
    CHECK_FALSE(dir.open_rw("locks/x.lock").has_value());
    dir.touch(rel.parent_path() / kLastUseFile);
    CHECK(dir.read(rel.parent_path() / kManifestFile).has_value());

    // A build through it never starts: the key's lock cannot be taken.
    Cache layer(tmp / "team", {}, CacheAccess::ReadOnly);
    bool built = false;
    const std::string other = fake_key("layer-other");
    auto r = layer.get_or_build(other, [&](const Staging&) -> std::expected<void, Error> {
        built = true;
        return {};
    });
    CHECK_FALSE(r.has_value());
    CHECK_FALSE(built);
    CHECK(layer_tree_state(tmp / "team") == before);
}

TEST_CASE("layers: the own cache, then the read-only ones in order; bad ones skipped with why",
          "[cache][layers]") {
    test::TempDir tmp;
    REQUIRE(Cache(tmp / "a").ensure_created().has_value());
    REQUIRE(Cache(tmp / "b").ensure_created().has_value());
    fs::create_symlink(tmp / "a", tmp / "link");
    test::write_file(tmp / "file", "");
    fs::create_directories(tmp / "plain");
    auto env = env_of({{"BEKC_READ_ONLY_CACHES",
                        "b:missing::link:" + (tmp / "a").string() + ":file:plain:b/:./own/:"}});

    auto layers = resolve_cache_layers((tmp / "own/").string(), std::nullopt, env, tmp.path());
    REQUIRE(layers.has_value());
    CHECK(layers->own == tmp / "own/");
    CHECK_FALSE(layers->demoted);
    // Relative elements are taken from the working directory; a cache named
    // twice, or naming the own cache, is looked in once.
    CHECK(layers->read_only == std::vector<fs::path>{tmp / "b", tmp / "a"});
    std::vector<std::string> skipped;
    for (const auto& s : layers->skipped) skipped.push_back(s.message());
    CHECK(skipped ==
          std::vector<std::string>{
              "read-only cache " + (tmp / "missing").string() + " skipped: it does not exist",
              "read-only cache " + (tmp / "link").string() +
                  " skipped: it is a symbolic link, and bekc follows none to a "
                  "read-only cache; name the directory it points to",
              "read-only cache " + (tmp / "file").string() + " skipped: it is not a directory",
              "read-only cache " + (tmp / "plain").string() +
                  " skipped: it is not a bekc cache (it has no bekc-cache.json)",
          });
    // Checking them wrote nothing into any.
    CHECK_FALSE(fs::exists(tmp / "plain" / "bekc-cache.json"));
    CHECK_FALSE(fs::exists(tmp / "own"));

    // --read-only-caches replaces the setting; "" names none.
    auto flagged = resolve_cache_layers((tmp / "own").string(), "a", env, tmp.path());
    REQUIRE(flagged.has_value());
    CHECK(flagged->read_only == std::vector<fs::path>{tmp / "a"});
    CHECK(flagged->skipped.empty());
    auto none = resolve_cache_layers((tmp / "own").string(), "", env, tmp.path());
    REQUIRE(none.has_value());
    CHECK(none->read_only.empty());
    CHECK(none->skipped.empty());
}

TEST_CASE("layers: an unreadable read-only cache is skipped", "[cache][layers]") {
    if (::geteuid() == 0) return;  // root reads every directory
    test::TempDir tmp;
    REQUIRE(Cache(tmp / "a").ensure_created().has_value());
    fs::permissions(tmp / "a", fs::perms::none);
    auto layers =
        resolve_cache_layers((tmp / "own").string(), (tmp / "a").string(), env_of({}), tmp.path());
    fs::permissions(tmp / "a", fs::perms::owner_all);
    REQUIRE(layers.has_value());
    REQUIRE(layers->skipped.size() == 1);
    CHECK_THAT(layers->skipped[0].why, Catch::StartsWith("it cannot be read: Permission denied"));
}

TEST_CASE("layers: a cache this user can write stays the own cache", "[cache][layers]") {
    test::TempDir tmp;
    REQUIRE(Cache(tmp / "c").ensure_created().has_value());
    auto env = env_of({{"HOME", (tmp / "home").string()}});
    auto own = resolve_own_cache((tmp / "c").string(), env);
    REQUIRE(own.has_value());
    CHECK(own->root == tmp / "c");
    CHECK_FALSE(own->demoted);
    CHECK_FALSE(read_only_here(tmp / "c"));
    CHECK_FALSE(read_only_here(tmp / "missing"));
}

namespace {

// A cache at `dir` whose marker has a "pack" object of `name` made by
// bekc `bekc_version`.
void write_installed_pack(const fs::path& dir, const std::string& name,
                          const std::string& bekc_version) {
    test::write_file(dir / "bekc-cache.json", R"({"bekc_cache": 1, "pack": {"name": ")" + name +
                                                  R"(", "version": "1.0", "bekc_version": ")" +
                                                  bekc_version +
                                                  R"(", "cuda": "", "archs": [], "modules": []}})");
}

}  // namespace

TEST_CASE("layers: installed packs of the Python sites come after the caches named",
          "[cache][layers]") {
    test::TempDir tmp;
    fs::path site = tmp / "site", venv_site = tmp / "venv/lib/python3.12/site-packages";
    write_installed_pack(site / "bekc_packs/b", "b", kVersion);
    write_installed_pack(site / "bekc_packs/a", "a", kVersion);
    write_installed_pack(site / "bekc_packs/old", "old", "0.0.1");
    write_installed_pack(site / "bekc_packs/~gone", "gone", kVersion);  // pip's leftover
    test::write_file(site / "bekc_packs/plain/bekc-cache.json", R"({"bekc_cache": 1})");
    write_installed_pack(venv_site / "bekc_packs/c", "c", kVersion);
    REQUIRE(Cache(tmp / "team").ensure_created().has_value());
    auto env = env_of({{"VIRTUAL_ENV", (tmp / "venv").string()}});

    // --python-site's relative directory is taken from the working directory.
    auto layers = resolve_cache_layers((tmp / "own").string(), "team", env, tmp.path(), {"site"});
    REQUIRE(layers.has_value());
    CHECK(layers->read_only == std::vector<fs::path>{tmp / "team", site / "bekc_packs/a",
                                                     site / "bekc_packs/b",
                                                     venv_site / "bekc_packs/c"});
    REQUIRE(layers->packs.size() == 3);
    CHECK(layers->packs[0].info.name == "a");
    CHECK(layers->packs[2].dir == venv_site / "bekc_packs/c");
    std::vector<std::string> skipped;
    for (const auto& s : layers->skipped) skipped.push_back(s.message());
    CHECK(skipped ==
          std::vector<std::string>{
              "installed pack " + (site / "bekc_packs/old").string() +
                  " skipped: it was made by bekc 0.0.1 and this is bekc " + kVersion +
                  ", whose keys none of its entries can match; install the pack's release for "
                  "bekc " +
                  kVersion,
              "installed pack " + (site / "bekc_packs/plain").string() +
                  " skipped: its bekc-cache.json has no \"pack\" object",
          });

    // A pack also named as a read-only cache is looked in once, where it is named.
    auto named = resolve_cache_layers((tmp / "own").string(), "site/bekc_packs/b", env, tmp.path(),
                                      {"site"});
    REQUIRE(named.has_value());
    CHECK(named->read_only == std::vector<fs::path>{site / "bekc_packs/b", site / "bekc_packs/a",
                                                    venv_site / "bekc_packs/c"});
}
