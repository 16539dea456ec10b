#include "store/entry.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/hash.hpp"
#include "store/layout.hpp"
#include "store/stamp.hpp"

namespace bekc {

namespace {

// The fields of a manifest the cache relies on.
struct ManifestFacts {
    std::string name, library, library_sha256;
    size_t targets = 0;
};

std::string string_field(const nlohmann::json& j, const char* field) {
    auto it = j.find(field);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::expected<ManifestFacts, std::string> read_manifest(const fs::path& file,
                                                        std::string_view key) {
    std::string name = file.filename().string();
    auto text = read_text(file);
    if (!text) return std::unexpected(name + " is missing");
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object()) return std::unexpected(name + " is not a JSON object");
    auto schema = j.find("schema");
    if (schema == j.end() || *schema != 1) return std::unexpected(name + " is not schema 1");
    if (string_field(j, "key") != key) return std::unexpected(name + " is for another key");
    ManifestFacts facts{string_field(j, "name"), string_field(j, "library"),
                        string_field(j, "library_sha256"), 0};
    // The library must sit inside the entry: a plain file name, no path.
    const std::string& lib = facts.library;
    if (lib.empty() || lib == "." || lib == ".." || lib.find('/') != std::string::npos) {
        return std::unexpected(name + " names no library file inside the entry");
    }
    if (facts.library_sha256.size() != 64) return std::unexpected(name + " has no library_sha256");
    if (auto t = j.find("targets"); t != j.end() && t->is_array()) facts.targets = t->size();
    return facts;
}

// Both manifests, which must agree on the library.
std::expected<ManifestFacts, std::string> read_manifests(const fs::path& dir,
                                                         std::string_view key) {
    auto main = read_manifest(dir / kManifestFile, key);
    if (!main) return main;
    auto no_graph = read_manifest(dir / kManifestNoGraphFile, key);
    if (!no_graph) return no_graph;
    if (no_graph->library != main->library || no_graph->library_sha256 != main->library_sha256) {
        return std::unexpected(
            fmt::format("{} and {} name different libraries", kManifestFile, kManifestNoGraphFile));
    }
    return main;
}

// The ladder described in entry.hpp. Stamp refreshes are best effort: a
// read-only cache still serves hits, only without the shortcut.
std::expected<void, std::string> check_library(const fs::path& library, const fs::path& stamp_file,
                                               const std::string& sha256, CheckLevel level) {
    auto now = stat_file(library);
    std::string name = library.filename().string();
    if (!now || !now->is_regular)
        return std::unexpected(fmt::format("library {} is missing", name));
    auto stamp = LibraryStamp::read(stamp_file);
    if (level == CheckLevel::Cheap && stamp) {
        if (stamp->stat == *now) return {};
        if (stamp->stat.size == now->size) {
            auto fresh = LibraryStamp::of(library);
            if (fresh && fresh->xxh128 == stamp->xxh128) {
                (void)fresh->write(stamp_file);
                return {};
            }
        }
    }
    auto actual = sha256_file(library);
    if (!actual) return std::unexpected(actual.error());
    if (*actual != sha256) {
        return std::unexpected(fmt::format(
            "library {} does not match library_sha256 (truncated or modified after publishing)",
            name));
    }
    if (!stamp || stamp->stat != *now) {
        if (auto fresh = LibraryStamp::of(library)) (void)fresh->write(stamp_file);
    }
    return {};
}

Entry make_entry(const fs::path& dir, std::string_view key, const ManifestFacts& facts) {
    return Entry{std::string(key), dir, facts.name, dir / facts.library, facts.targets};
}

}  // namespace

fs::path Entry::manifest(bool cuda_graph) const {
    return dir / (cuda_graph ? kManifestFile : kManifestNoGraphFile);
}

std::expected<Entry, std::string> check_entry(const fs::path& dir, std::string_view key,
                                              CheckLevel level) {
    auto facts = read_manifests(dir, key);
    if (!facts) return std::unexpected(facts.error());
    auto library =
        check_library(dir / facts->library, dir / kStampFile, facts->library_sha256, level);
    if (!library) return std::unexpected(library.error());
    return make_entry(dir, key, *facts);
}

std::expected<Entry, std::string> seal_entry(const fs::path& staging, std::string_view key) {
    auto facts = read_manifests(staging, key);
    if (!facts) return std::unexpected(facts.error());
    fs::path library = staging / facts->library;
    auto actual = sha256_file(library);
    if (!actual) return std::unexpected(actual.error());
    if (*actual != facts->library_sha256) {
        return std::unexpected(fmt::format("library_sha256 in {} is not the SHA-256 of {}",
                                           kManifestFile, facts->library));
    }
    auto stamp = LibraryStamp::of(library);
    if (!stamp) return std::unexpected(stamp.error());
    if (auto written = stamp->write(staging / kStampFile); !written) {
        return std::unexpected(written.error());
    }
    touch(staging / kLastUseFile);
    return make_entry(staging, key, *facts);
}

}  // namespace bekc
