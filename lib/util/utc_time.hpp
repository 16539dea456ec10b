// Times as the JSON bekc writes gives them: ISO 8601 in UTC, to the second.
#pragma once

#include <ctime>
#include <string>

namespace bekc {

// "2025-06-01T09:12:44Z".
inline std::string utc_time(std::time_t t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

}  // namespace bekc
