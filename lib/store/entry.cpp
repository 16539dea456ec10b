#include "store/entry.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/hash.hpp"
#include "store/layout.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

constexpr uint64_t kMaxManifestBytes = 16 << 20;

// The fields of a manifest the cache relies on.
struct ManifestFacts {
    std::string name, library, library_sha256;
    size_t targets = 0;
};

std::string string_field(const nlohmann::json& j, const char* field) {
    auto it = j.find(field);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::expected<ManifestFacts, Error> parse_manifest(std::string_view name, const std::string& text,
                                                   std::string_view key) {
    auto j = parse_json(text).value_or(nullptr);
    std::string n(name);
    if (!j.is_object()) return fail(ErrorKind::Cache, n + " is not a JSON object");
    auto schema = j.find("schema");
    if (schema == j.end() || *schema != 1) return fail(ErrorKind::Cache, n + " is not schema 1");
    if (string_field(j, "key") != key) return fail(ErrorKind::Cache, n + " is for another key");
    ManifestFacts facts{string_field(j, "name"), string_field(j, "library"),
                        string_field(j, "library_sha256"), 0};
    // The library must sit inside the entry: a plain file name, no path.
    const std::string& lib = facts.library;
    if (lib.empty() || lib == "." || lib == ".." || lib.find('/') != std::string::npos ||
        lib == kStampFile || lib == kLastUseFile || lib == kManifestFile ||
        lib == kManifestNoGraphFile || lib == kDependenciesFile) {
        return fail(ErrorKind::Cache, n + " names no library file inside the entry");
    }
    if (facts.library_sha256.size() != 64)
        return fail(ErrorKind::Cache, n + " has no library_sha256");
    if (auto t = j.find("targets"); t != j.end() && t->is_array()) facts.targets = t->size();
    return facts;
}

// Both manifests, which must agree on the library. `contents` holds what the
// seal check read; anything missing there is read now.
std::expected<ManifestFacts, Error> read_manifests(const CacheDir& cache, const fs::path& dir,
                                                   std::string_view key, SealedContents& contents) {
    std::optional<ManifestFacts> first;
    for (std::string_view file : {kManifestFile, kManifestNoGraphFile}) {
        std::string name(file);
        if (!contents.count(name)) {
            auto text = cache.read(dir / name, kMaxManifestBytes);
            if (!text) return fail(ErrorKind::Cache, name + " is missing or unreadable");
            contents[name] = std::move(*text);
        }
        auto facts = parse_manifest(name, contents[name], key);
        if (!facts) return facts;
        if (first &&
            (first->library != facts->library || first->library_sha256 != facts->library_sha256))
            return fail(ErrorKind::Cache, fmt::format("{} and {} name different libraries",
                                                      kManifestFile, kManifestNoGraphFile));
        if (!first) first = std::move(*facts);
    }
    return *first;
}

Entry make_entry(const CacheDir& cache, const fs::path& dir, std::string_view key,
                 const ManifestFacts& facts) {
    fs::path abs = cache.path(dir);
    Entry entry{std::string(key), abs, facts.name, abs / facts.library, facts.targets};
    entry.library_sha256 = facts.library_sha256;
    return entry;
}

// Entries published before seals existed: the library against the manifest,
// then sealed as they are.
std::expected<Entry, Error> check_unsealed(const CacheDir& cache, const fs::path& dir,
                                           std::string_view key) {
    SealedContents contents;
    auto facts = read_manifests(cache, dir, key, contents);
    if (!facts) return std::unexpected(facts.error());
    auto fd = cache.open_read(dir / facts->library);
    if (!fd) return fail(ErrorKind::Cache, fmt::format("library {} is missing", facts->library));
    auto sha = sha256_fd(fd->get(), cache.path(dir / facts->library));
    if (!sha) return std::unexpected(sha.error());
    if (*sha != facts->library_sha256)
        return fail(
            ErrorKind::Cache,
            fmt::format(
                "library {} does not match library_sha256 (truncated or modified after publishing)",
                facts->library));
    (void)seal_dir(cache, dir, facts->library);  // best effort: read-only caches
    return make_entry(cache, dir, key, *facts);
}

}  // namespace

fs::path Entry::manifest(bool cuda_graph) const {
    return dir / (cuda_graph ? kManifestFile : kManifestNoGraphFile);
}

std::expected<Entry, Error> check_entry(const CacheDir& cache, const fs::path& dir,
                                        std::string_view key, CheckLevel level) {
    auto seal = Seal::read(cache, dir);
    if (!seal) return check_unsealed(cache, dir, key);
    if (!seal->library) return fail(ErrorKind::Cache, "stamp.json names no library");
    auto contents = check_seal(cache, dir, *seal, level);
    if (!contents) return std::unexpected(contents.error());
    for (std::string_view required : {kManifestFile, kManifestNoGraphFile})
        if (!seal->files.count(std::string(required)))
            return fail(ErrorKind::Cache, std::string(required) + " is not sealed");
    auto facts = read_manifests(cache, dir, key, *contents);
    if (!facts) return std::unexpected(facts.error());
    if (facts->library != seal->library->name ||
        facts->library_sha256 != seal->files[facts->library].sha256)
        return fail(ErrorKind::Cache, "the manifests and the seal name different libraries");
    return make_entry(cache, dir, key, *facts);
}

std::expected<Entry, Error> seal_entry(const CacheDir& cache, const fs::path& staging,
                                       std::string_view key) {
    SealedContents contents;
    auto facts = read_manifests(cache, staging, key, contents);
    if (!facts) return std::unexpected(facts.error());
    auto seal = seal_dir(cache, staging, facts->library);
    if (!seal) return std::unexpected(seal.error());
    if (seal->files[facts->library].sha256 != facts->library_sha256) {
        return fail(ErrorKind::Cache, fmt::format("library_sha256 in {} is not the SHA-256 of {}",
                                                  kManifestFile, facts->library));
    }
    cache.touch(staging / kLastUseFile);
    return make_entry(cache, staging, key, *facts);
}

}  // namespace bekc
