#include "store/layout.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "util/error.hpp"

namespace bekc {

namespace {

fs::path fan_out(const fs::path& dir, std::string_view key, std::string_view extension) {
    if (!is_valid_key(key)) {
        throw InternalError(fmt::format("'{}' is not a cache key", key));
    }
    return dir / key.substr(0, 2) / (std::string(key.substr(2)) + std::string(extension));
}

// "<host>.<pid>.<16 hex>" as util/fs unique_suffix() makes it.
bool is_suffix(std::string_view s) {
    size_t last = s.rfind('.');
    if (last == std::string_view::npos || !is_hex(s.substr(last + 1), 16)) return false;
    std::string_view rest = s.substr(0, last);
    size_t dot = rest.rfind('.');
    if (dot == std::string_view::npos || dot == 0) return false;
    std::string_view pid = rest.substr(dot + 1);
    return !pid.empty() &&
           std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool is_hex(std::string_view s, size_t n) {
    return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

bool is_valid_key(std::string_view key) {
    return is_hex(key, 64);
}

fs::path CacheLayout::entry(std::string_view key) {
    return fan_out(entries(), key, "");
}

fs::path CacheLayout::step(std::string_view key) {
    return fan_out(steps(), key, "");
}

fs::path CacheLayout::lock(std::string_view key) {
    return fan_out(locks(), key, ".lock");
}

fs::path CacheLayout::direct_record(std::string_view direct_key) {
    return fan_out(direct(), direct_key, kRecordExtension);
}

fs::path CacheLayout::portable_record(std::string_view portable_key) {
    return fan_out(portable(), portable_key, kRecordExtension);
}

fs::path CacheLayout::history_record(std::string_view inputs_id) {
    return fan_out(history(), inputs_id, ".json");
}

fs::path CacheLayout::named_lock(std::string_view name) {
    return locks() / (std::string(name) + ".lock");
}

fs::path CacheLayout::runtime_include(std::string_view headers_hash) {
    if (!is_hex(headers_hash, 16)) throw InternalError("bad runtime hash");
    return runtime() / std::string(headers_hash) / "include";
}

fs::path CacheLayout::runtime_object_dir(std::string_view headers_hash, std::string_view compiler) {
    if (!is_hex(headers_hash, 16) || !is_hex(compiler, 16))
        throw InternalError("bad runtime object hash");
    return runtime() / std::string(headers_hash) / "obj" / std::string(compiler);
}

fs::path CacheLayout::runtime_include_lock(std::string_view headers_hash) {
    return named_lock(fmt::format("runtime.{}", headers_hash));
}

fs::path CacheLayout::runtime_object_lock(std::string_view headers_hash,
                                          std::string_view compiler) {
    return named_lock(fmt::format("runtime.{}.{}", headers_hash, compiler));
}

fs::path CacheLayout::staging(std::string_view what) {
    return tmp() / (std::string(what) + "." + unique_suffix());
}

fs::path CacheLayout::trash() {
    return tmp() / ("trash." + unique_suffix());
}

std::string CacheLayout::key_of(std::string_view fan, std::string_view name,
                                std::string_view extension) {
    if (!name.ends_with(extension)) return "";
    std::string key =
        std::string(fan) + std::string(name.substr(0, name.size() - extension.size()));
    return fan.size() == 2 && is_valid_key(key) ? key : "";
}

bool CacheLayout::is_own_temp(std::string_view name) {
    size_t dot = name.find('.');
    if (dot == std::string_view::npos || !is_suffix(name.substr(dot + 1))) return false;
    std::string_view what = name.substr(0, dot);
    return is_valid_key(what) || what == "trash" || what == "runtime" || what == "scratch";
}

std::string CacheLayout::staging_key(std::string_view name) {
    size_t dot = name.find('.');
    if (dot == std::string_view::npos || !is_own_temp(name)) return "";
    std::string_view what = name.substr(0, dot);
    return is_valid_key(what) ? std::string(what) : "";
}

bool CacheLayout::is_inline_source_name(std::string_view name) {
    return is_hex(name, 64);
}

bool CacheLayout::is_write_temp(std::string_view name) {
    size_t at = name.find(".tmp.");
    return at != std::string_view::npos && at > 0 && is_suffix(name.substr(at + 5));
}

std::expected<fs::path, Error> default_cache_dir(const EnvLookup& getenv) {
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
    return fail(
        ErrorKind::Usage,
        std::string(
            "cannot choose a cache directory: neither BEKC_CACHE_DIR, XDG_CACHE_HOME nor HOME is "
            "set; pass --cache-dir DIR or set BEKC_CACHE_DIR"));
}

std::expected<fs::path, Error> resolve_cache_root(const std::optional<std::string>& flag,
                                                  const EnvLookup& getenv) {
    if (flag) return fs::absolute(*flag);
    auto dir = default_cache_dir(getenv);
    if (!dir) return dir;
    return fs::absolute(*dir);
}

}  // namespace bekc
