// Where the remote cache's settings come from, and which are refused before
// anything is sent.
#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "remote/remote_cache.hpp"
#include "store/size.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

bool starts_with_nocase(const std::string& s, std::string_view prefix) {
    return s.size() >= prefix.size() &&
           std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
               return a == std::tolower(static_cast<unsigned char>(b));
           });
}

bool truthy(const std::optional<std::string>& v) {
    if (!v) return false;
    std::string s = *v;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s == "1" || s == "true" || s == "yes" || s == "on";
}

// Why `c` cannot be used, or "".
std::string problem_of(const RemoteConfig& c, const std::optional<std::string>& timeout,
                       const std::optional<std::string>& max_entry) {
    if (!starts_with_nocase(c.url, "http://") && !starts_with_nocase(c.url, "https://"))
        return fmt::format("'{}' is not an http:// or https:// URL", display_url(c.url));
    if (has_control_char(c.url) || c.url.find(' ') != std::string::npos)
        return "the URL contains spaces or control characters";
    // A line break would let the token add headers of its own.
    if (c.token && has_control_char(*c.token))
        return "$BEKC_REMOTE_TOKEN contains control characters";
    if (timeout) {
        int seconds = 0;
        auto [end, ec] =
            std::from_chars(timeout->data(), timeout->data() + timeout->size(), seconds);
        if (ec != std::errc() || end != timeout->data() + timeout->size() || seconds < 1 ||
            seconds > 3600)
            return "$BEKC_REMOTE_TIMEOUT='" + *timeout +
                   "' is not a number of seconds from 1 to 3600";
    }
    if (max_entry) {
        auto bytes = parse_size(*max_entry);
        if (!bytes) return "$BEKC_REMOTE_MAX_ENTRY_SIZE: " + bytes.error().message;
        if (*bytes < 1024) return "$BEKC_REMOTE_MAX_ENTRY_SIZE must be at least 1 KiB";
    }
    return "";
}

}  // namespace

std::optional<RemoteConfig> remote_config(const std::optional<std::string>& flag_url,
                                          bool flag_read_only, const EnvLookup& env) {
    std::optional<std::string> url = flag_url ? flag_url : env("BEKC_REMOTE_CACHE");
    if (!url || url->empty()) return std::nullopt;
    RemoteConfig c;
    c.url = *url;
    c.read_only = flag_read_only || truthy(env("BEKC_REMOTE_CACHE_READONLY"));
    c.token = env("BEKC_REMOTE_TOKEN");
    auto timeout = env("BEKC_REMOTE_TIMEOUT");
    auto max_entry = env("BEKC_REMOTE_MAX_ENTRY_SIZE");
    if (max_entry && max_entry->empty()) max_entry.reset();
    c.problem = problem_of(c, timeout, max_entry);
    if (c.problem.empty() && timeout) c.timeout = std::chrono::seconds(std::stoi(*timeout));
    if (c.problem.empty() && max_entry) c.max_entry_bytes = *parse_size(*max_entry);
    return c;
}

std::string display_url(const std::string& url) {
    std::string out = url;
    size_t scheme = out.find("://");
    size_t host = scheme == std::string::npos ? 0 : scheme + 3;
    size_t slash = out.find('/', host);
    size_t at = out.rfind('@', slash == std::string::npos ? std::string::npos : slash);
    if (at != std::string::npos && at >= host) out.erase(host, at + 1 - host);
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

}  // namespace bekc
