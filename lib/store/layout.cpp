#include "store/layout.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "util/error.hpp"

namespace bekc {

namespace {

fs::path fan_out(const fs::path& dir, std::string_view key, std::string_view extension) {
    if (!is_valid_key(key)) {
        throw FatalError(fmt::format("internal error: '{}' is not a cache key", key),
                         kExitInternal);
    }
    return dir / key.substr(0, 2) / (std::string(key.substr(2)) + std::string(extension));
}

}  // namespace

bool is_valid_key(std::string_view key) {
    return key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

fs::path CacheLayout::entry_dir(std::string_view key) const {
    return fan_out(entries_dir(), key, "");
}

fs::path CacheLayout::lock_file(std::string_view key) const {
    return fan_out(locks_dir(), key, ".lock");
}

fs::path CacheLayout::direct_file(std::string_view direct_key) const {
    return fan_out(direct_dir(), direct_key, ".json");
}

std::string CacheLayout::key_of(const fs::path& fanned_out) {
    std::string key = fanned_out.parent_path().filename().string() + fanned_out.stem().string();
    if (fanned_out.has_extension() && fanned_out.extension() != ".lock" &&
        fanned_out.extension() != ".json") {
        return "";
    }
    return is_valid_key(key) ? key : "";
}

std::expected<fs::path, std::string> default_cache_dir(const EnvLookup& getenv) {
    auto non_empty = [&](std::string_view name) -> std::optional<std::string> {
        auto value = getenv(name);
        if (value && !value->empty()) return value;
        return std::nullopt;
    };
    if (auto dir = non_empty("BEKC_CACHE_DIR")) return fs::path(*dir);
    if (auto xdg = non_empty("XDG_CACHE_HOME"); xdg && fs::path(*xdg).is_absolute()) {
        return fs::path(*xdg) / "bekc";
    }
    if (auto home = non_empty("HOME")) return fs::path(*home) / ".cache" / "bekc";
    return std::unexpected(std::string(
        "cannot choose a cache directory: neither BEKC_CACHE_DIR, XDG_CACHE_HOME nor HOME is "
        "set; pass --cache-dir DIR or set BEKC_CACHE_DIR"));
}

}  // namespace bekc
