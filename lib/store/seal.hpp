// stamp.json, the seal of a directory bekc published (an entry, a runtime
// header tree, a runtime object): the size and SHA-256 of every file in it,
// written when it was published, so that a build and `cache verify` can tell
// that nothing in it changed since. Files added later are ignored; the seal
// itself and last-use are not sealed.
//
// The library of an entry (tens of MB) also gets the cheap ladder of
// entry.hpp: its size, mtime, ctime and XXH3-128 at publish, so a hit need not
// hash it.
//
// A shared cache trusts its writers: someone able to rewrite both a file and
// the seal can make them agree. The seal catches what goes wrong by accident
// or by half: truncation, a partial copy, an edited manifest, a disk error.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>

#include "store/cache_dir.hpp"
#include "store/file_ops.hpp"
#include "util/error.hpp"

namespace bekc {

enum class CheckLevel {
    Cheap,  // files up to kSmallFile hashed, larger ones by size; the library by its ladder
    Full,   // every file's SHA-256
};

struct SealedFile {
    uint64_t size = 0;
    std::string sha256;
};

struct LibraryStamp {
    std::string name;
    FileStat stat;
    std::string xxh128;
};

struct Seal {
    std::map<std::string, SealedFile> files;  // path relative to the directory
    std::optional<LibraryStamp> library;

    // The error when stamp.json is missing or is not a seal.
    static std::expected<Seal, Error> read(const CacheDir& cache, const fs::path& dir);
    std::expected<void, Error> write(const CacheDir& cache, const fs::path& dir) const;
};

// Reads every regular file under `dir` (a link anywhere is an error) and
// writes the seal; `library`, when given, also gets the ladder.
std::expected<Seal, Error> seal_dir(const CacheDir& cache, const fs::path& dir,
                                    const std::optional<std::string>& library);

// What check_seal read: the bytes of the small files (the manifests), so the
// caller parses them without reading twice.
using SealedContents = std::map<std::string, std::string>;

// Checks `dir` against its seal at `level`. The error says what is wrong, in a
// phrase that fits "<dir> is corrupt: …".
std::expected<SealedContents, Error> check_seal(const CacheDir& cache, const fs::path& dir,
                                                CheckLevel level);
// The same with the seal the caller has just read from `dir` (a hit reads it
// once, not twice).
std::expected<SealedContents, Error> check_seal(const CacheDir& cache, const fs::path& dir,
                                                Seal seal, CheckLevel level);

}  // namespace bekc
