// Where the remote cache's settings come from, and which are refused before
// anything is sent.
#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "remote/remote_cache.hpp"
#include "remote/s3_target.hpp"
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
// A number of seconds from `least` to 3600, or nullopt.
std::optional<int> seconds_of(const std::string& text, int least) {
    int seconds = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size() || seconds < least || seconds > 3600)
        return std::nullopt;
    return seconds;
}

std::string problem_of(const RemoteConfig& c, const std::optional<std::string>& timeout,
                       const std::optional<std::string>& max_entry,
                       const std::optional<std::string>& wait) {
    if (!starts_with_nocase(c.url, "http://") && !starts_with_nocase(c.url, "https://") &&
        !is_s3_url(c.url))
        return fmt::format("'{}' is not an http://, https:// or s3:// URL", display_url(c.url));
    if (has_control_char(c.url) || c.url.find(' ') != std::string::npos)
        return "the URL contains spaces or control characters";
    // A line break would let the token add headers of its own.
    if (c.token && has_control_char(*c.token))
        return "$BEKC_REMOTE_TOKEN contains control characters";
    if (timeout && !seconds_of(*timeout, 1))
        return "$BEKC_REMOTE_TIMEOUT='" + *timeout + "' is not a number of seconds from 1 to 3600";
    if (wait && !seconds_of(*wait, 0))
        return "$BEKC_REMOTE_WAIT='" + *wait +
               "' is not a number of seconds from 0 (no waiting) to 3600";
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
    auto wait = env("BEKC_REMOTE_WAIT");
    if (max_entry && max_entry->empty()) max_entry.reset();
    if (wait && wait->empty()) wait.reset();
    c.problem = problem_of(c, timeout, max_entry, wait);
    if (c.problem.empty() && timeout) c.timeout = std::chrono::seconds(*seconds_of(*timeout, 1));
    if (c.problem.empty() && max_entry) c.max_entry_bytes = *parse_size(*max_entry);
    if (c.problem.empty() && wait) c.wait = std::chrono::seconds(*seconds_of(*wait, 0));
    if (c.problem.empty() && is_s3_url(c.url)) {
        auto target = s3_target(c.url, env);
        if (target)
            c.s3 = std::move(*target);
        else
            c.problem = target.error();
    }
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
