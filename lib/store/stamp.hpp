// stamp.json: what the library looked like when its entry was published, for
// the cheap integrity check described in entry.hpp.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>

#include "store/file_ops.hpp"

namespace bekc {

struct LibraryStamp {
    FileStat stat;
    std::string xxh128;

    // Reads the library now: stat, then XXH3-128 of its content.
    static std::expected<LibraryStamp, std::string> of(const fs::path& library);
    // nullopt when the file is missing or not a stamp (an old or broken one is
    // not an error: the check falls through to a content hash).
    static std::optional<LibraryStamp> read(const fs::path& stamp_file);
    std::expected<void, std::string> write(const fs::path& stamp_file) const;
};

}  // namespace bekc
