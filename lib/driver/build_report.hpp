// What `bekc build` reports beyond the manifest: why it missed (the direct key
// parts that changed since the last build of the same inputs), the hit and
// miss counters in the cache, and one JSON line per build appended to
// $BEKC_LOG (or log_file in bekc.conf). See docs/cli.md, "Build log and
// statistics".
#pragma once

#include <expected>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "driver/build.hpp"
#include "prep/reporter.hpp"
#include "util/env.hpp"
#include "util/error.hpp"

namespace bekc {

// After a build that returned: updates the history and the counters, and
// returns the "why" object (null on a hit) for --json and the log.
nlohmann::ordered_json account_build(const BuildOptions& o, const BuildResult& r,
                                     const EnvLookup& settings);

// After a build that returned: account_build, then log_build (a log that
// could not be written is a warning through `report`). Returns the object
// `bekc build --json` prints.
nlohmann::ordered_json report_build(const BuildOptions& o, const BuildResult& r,
                                    const EnvLookup& settings, const Reporter& report);

// After a build that failed: counts the error.
void account_failure(const BuildOptions& o, const EnvLookup& settings);

// Appends one line to the build log when one is set. An error when it could
// not be written, for a warning (the build's result stands). `r`: nullptr
// when the build failed.
std::expected<void, Error> log_build(const BuildOptions& o, const BuildResult* r,
                                     const nlohmann::ordered_json& why, int exit_code,
                                     double seconds, const EnvLookup& settings);

}  // namespace bekc
