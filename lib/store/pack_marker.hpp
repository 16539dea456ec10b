// What a pack's marker says of it. A pack is a relocatable, read-only bekc
// cache of prebuilt libraries (docs/cache.md, "Packs"): its marker
// `bekc-cache.json` holds, besides {"bekc_cache": 1}, a "pack" object
//   {"name": str, "version": str, "bekc_version": str, "cuda": "13.0" or "",
//    "archs": ["sm_80", ...], "modules": [str, ...]}.
// Read here without writing anything, and without following a link.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace bekc {

namespace fs = std::filesystem;

struct PackInfo {
    std::string name, version, bekc_version, cuda;
    std::vector<std::string> archs, modules;
};

// The "pack" object of the marker of the cache at `root`; nullopt when the
// marker has none (a plain cache). An error names the marker and why when it
// cannot be read, does not parse, or its "pack" object is not as above.
std::expected<std::optional<PackInfo>, Error> read_pack_info(const fs::path& root);

// Why `name` cannot name a pack ("" when it can): letters, digits, '.' and
// '_' only, not starting with '.'. A pack's name is a directory name
// (bekc_packs/<name>/) and part of a wheel's distribution name.
std::string pack_name_problem(const std::string& name);

}  // namespace bekc
