#include "store/seal.hpp"

#include <optional>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/hash.hpp"
#include "store/layout.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

using nlohmann::json;

// Files at most this large are read and hashed on every check.
constexpr uint64_t kSmallFile = 64 * 1024;
constexpr uint64_t kMaxSealBytes = 16 << 20;

// Every regular file under `dir`, as paths relative to it.
std::expected<void, Error> walk(const CacheDir& cache, const fs::path& dir, const fs::path& rel,
                                std::vector<std::string>& out) {
    auto items = cache.list(dir / rel);
    if (!items) return std::unexpected(items.error());
    for (const auto& item : *items) {
        fs::path child = rel / item.name;
        if (item.is_dir) {
            if (auto w = walk(cache, dir, child, out); !w) return w;
        } else if (item.is_regular) {
            if (rel.empty() && (item.name == kStampFile || item.name == kLastUseFile)) continue;
            out.push_back(child.string());
        } else {
            return fail(ErrorKind::Cache,
                        cache.path(dir / child).string() + " is not a regular file");
        }
    }
    return {};
}

// On success, the stamp to write when the library's stat moved (copied,
// touched or hard-linked) but its bytes are the sealed ones: the stat taken
// before the read that proved it, and that read's XXH3-128.
std::expected<std::optional<LibraryStamp>, Error> check_library(const CacheDir& cache,
                                                                const fs::path& dir,
                                                                const LibraryStamp& stamp,
                                                                const SealedFile& sealed,
                                                                CheckLevel level) {
    fs::path rel = dir / stamp.name;
    auto now = cache.stat(rel);
    if (!now || !now->file.is_regular)
        return fail(ErrorKind::Cache, fmt::format("library {} is missing", stamp.name));
    if (now->file.size != sealed.size)
        return fail(ErrorKind::Cache, fmt::format("library {} has {} bytes, not {}", stamp.name,
                                                  now->file.size, sealed.size));
    if (level == CheckLevel::Cheap && stamp.stat == now->file) return std::nullopt;
    auto fd = cache.open_read(rel);
    if (!fd) return std::unexpected(fd.error());
    if (level == CheckLevel::Cheap) {
        auto cheap = xxh128_fd(fd->get(), cache.path(rel));
        if (!cheap) return std::unexpected(cheap.error());
        if (*cheap == stamp.xxh128) return LibraryStamp{stamp.name, now->file, *cheap};
        // Other bytes: the SHA-256 says whether the stamp or the library is wrong.
        fd = cache.open_read(rel);
        if (!fd) return std::unexpected(fd.error());
    }
    auto digest = digest_fd(fd->get(), cache.path(rel));
    if (!digest) return std::unexpected(digest.error());
    if (digest->sha256 != sealed.sha256)
        return fail(
            ErrorKind::Cache,
            fmt::format(
                "library {} does not match its SHA-256 (truncated or modified after publishing)",
                stamp.name));
    if (stamp.stat == now->file) return std::nullopt;
    return LibraryStamp{stamp.name, now->file, digest->xxh128};
}

// The member `name` of the object `j` when it holds a T: a string, or an
// integer that T holds (a size is never negative).
template <typename T>
std::optional<T> member(const json& j, const char* name) {
    auto it = j.find(name);
    if (it == j.end()) return std::nullopt;
    if constexpr (std::is_same_v<T, std::string>) {
        if (it->is_string()) return it->get<std::string>();
    } else if constexpr (std::is_unsigned_v<T>) {
        if (it->is_number_unsigned()) return it->get<T>();
    } else {
        if (it->is_number_unsigned() && it->get<uint64_t>() <= uint64_t(INT64_MAX))
            return it->get<T>();
        if (it->is_number_integer() && !it->is_number_unsigned()) return it->get<T>();
    }
    return std::nullopt;
}

std::optional<SealedFile> sealed_file(const std::string& name, const json& f) {
    if (!f.is_object()) return std::nullopt;
    auto size = member<uint64_t>(f, "size");
    auto sha256 = member<std::string>(f, "sha256");
    // A name the seal may hold: a path below the directory.
    fs::path p(name);
    if (!size || !sha256 || sha256->size() != 64 || p.is_absolute() ||
        name.find("..") != std::string::npos)
        return std::nullopt;
    return SealedFile{*size, std::move(*sha256)};
}

std::optional<LibraryStamp> library_stamp(const json& lib) {
    if (!lib.is_object()) return std::nullopt;
    auto name = member<std::string>(lib, "name");
    auto size = member<uint64_t>(lib, "size");
    auto mtime = member<int64_t>(lib, "mtime_ns");
    auto ctime = member<int64_t>(lib, "ctime_ns");
    auto xxh128 = member<std::string>(lib, "xxh128");
    if (!name || !size || !mtime || !ctime || !xxh128) return std::nullopt;
    return LibraryStamp{std::move(*name), FileStat{*size, *mtime, *ctime, true},
                        std::move(*xxh128)};
}

// The seal stamp.json's JSON describes, or nullopt when it is not one.
std::optional<Seal> seal_of(const json& j) {
    if (!j.is_object() || member<uint64_t>(j, "seal") != 1u) return std::nullopt;
    auto files = j.find("files");
    if (files == j.end() || !files->is_object()) return std::nullopt;
    Seal seal;
    for (const auto& [name, f] : files->items()) {
        auto file = sealed_file(name, f);
        if (!file) return std::nullopt;
        seal.files[name] = std::move(*file);
    }
    if (auto lib = j.find("library"); lib != j.end()) {
        seal.library = library_stamp(*lib);
        if (!seal.library || !seal.files.count(seal.library->name)) return std::nullopt;
    }
    return seal;
}

}  // namespace

std::expected<Seal, Error> Seal::read(const CacheDir& cache, const fs::path& dir) {
    auto text = cache.read(dir / kStampFile, kMaxSealBytes);
    if (!text) return fail(ErrorKind::Cache, std::string(kStampFile) + " is missing or unreadable");
    auto seal = seal_of(parse_json(*text).value_or(nullptr));
    if (!seal) return fail(ErrorKind::Cache, std::string(kStampFile) + " is not a seal");
    return std::move(*seal);
}

std::expected<void, Error> Seal::write(const CacheDir& cache, const fs::path& dir) const {
    if (auto w = cache.writable(dir / kStampFile); !w) return w;
    json files = json::object();
    for (const auto& [name, f] : this->files)
        files[name] = {{"size", f.size}, {"sha256", f.sha256}};
    json j = {{"seal", 1}, {"files", files}};
    if (library)
        j["library"] = {{"name", library->name},
                        {"size", library->stat.size},
                        {"mtime_ns", library->stat.mtime_ns},
                        {"ctime_ns", library->stat.ctime_ns},
                        {"xxh128", library->xxh128}};
    std::string text = dump_json(j) + "\n";
    // Into the directory as it is, never re-created: a hit refreshing the
    // stamp of an entry that prune or verify has just removed must not bring
    // back a directory holding nothing but stamp.json.
    auto fd = cache.open_dir(dir);
    if (!fd) return std::unexpected(fd.error());
    return write_atomic_at(fd->get(), std::string(kStampFile), text, cache.path(dir / kStampFile));
}

std::expected<Seal, Error> seal_dir(const CacheDir& cache, const fs::path& dir,
                                    const std::optional<std::string>& library) {
    std::vector<std::string> names;
    if (auto w = walk(cache, dir, "", names); !w) return std::unexpected(w.error());
    Seal seal;
    // One read per file; the library's XXH3-128 comes from the same read.
    for (const auto& name : names) {
        fs::path rel = dir / name;
        auto fd = cache.open_read(rel);
        if (!fd) return std::unexpected(fd.error());
        auto digest = digest_fd(fd->get(), cache.path(rel));
        if (!digest) return std::unexpected(digest.error());
        seal.files[name] = {digest->stat.size, digest->sha256};
        if (library && name == *library)
            seal.library = LibraryStamp{*library, digest->stat, digest->xxh128};
    }
    if (library && !seal.library)
        return fail(ErrorKind::Cache, fmt::format("the library {} is missing", *library));
    if (auto w = seal.write(cache, dir); !w) return std::unexpected(w.error());
    return seal;
}

std::expected<SealedContents, Error> check_seal(const CacheDir& cache, const fs::path& dir,
                                                CheckLevel level) {
    auto seal = Seal::read(cache, dir);
    if (!seal) return std::unexpected(seal.error());
    return check_seal(cache, dir, std::move(*seal), level);
}

std::expected<SealedContents, Error> check_seal(const CacheDir& cache, const fs::path& dir,
                                                Seal seal, CheckLevel level) {
    SealedContents contents;
    std::optional<LibraryStamp> restamp;
    for (const auto& [name, sealed] : seal.files) {
        if (seal.library && name == seal.library->name) {
            auto ok = check_library(cache, dir, *seal.library, sealed, level);
            if (!ok) return std::unexpected(ok.error());
            restamp = std::move(*ok);
            continue;
        }
        fs::path rel = dir / name;
        if (level == CheckLevel::Cheap && sealed.size > kSmallFile) {
            auto st = cache.stat(rel);
            if (!st || !st->file.is_regular)
                return fail(ErrorKind::Cache, fmt::format("{} is missing", name));
            if (st->file.size != sealed.size)
                return fail(ErrorKind::Cache, fmt::format("{} has {} bytes, not {}", name,
                                                          st->file.size, sealed.size));
            continue;
        }
        auto text = cache.read(rel, sealed.size + 1);
        if (!text) return fail(ErrorKind::Cache, fmt::format("{} is missing or unreadable", name));
        if (text->size() != sealed.size || sha256_hex(*text) != sealed.sha256)
            return fail(ErrorKind::Cache, fmt::format("{} was modified after publishing", name));
        contents[name] = std::move(*text);
    }
    if (restamp && !cache.read_only()) {
        // Best effort: a read-only cache still serves hits, without the shortcut.
        seal.library = std::move(*restamp);
        (void)seal.write(cache, dir);
    }
    return contents;
}

}  // namespace bekc
