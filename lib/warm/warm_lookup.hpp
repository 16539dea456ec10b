// `bekc build --json` answered inside the caller's process when the local
// cache holds the build: libbekc_lookup.so (lookup/bekc_lookup.cpp) calls
// this, so a Python load on a warm cache starts no process. It parses the
// same arguments with the same option definitions (prep/build_args), reads
// the same settings, and runs the phases of a hit (run_build_if_cached) and
// the hit's accounting (report_build): the checks of a hit are the binary's
// own. Anything else is left to the binary, which then answers exactly as it
// always does: a miss, an error, and options that print more than the JSON or
// write before the look-up (-v, --explain-key, --dry-run,
// --compile-commands), --force, a kernel package, relative inputs, empty
// values and values after '=' that the command line checks first.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace bekc {

struct WarmHit {
    std::string json;      // the line `bekc build --json` prints on stdout, without '\n'
    std::string messages;  // what it prints on stderr (warnings), as it prints them
};

// `args`: the binary's argument vector ("bekc", "build", ...). Never starts
// a process and never writes to stdout or stderr; writes only what the
// binary's hit writes (the counters, the build log, -o's copies). nullopt:
// the binary must answer. Throws what the phases throw (FatalError, ...) on
// failures, which the caller also leaves to the binary.
std::optional<WarmHit> warm_lookup(const std::vector<std::string>& args);

}  // namespace bekc
