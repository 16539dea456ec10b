// bekc's exit codes, one row per kind of failure: the one table that
// exit_code_of reads, `bekc --help` lists, `--json` names a failure's kind
// from, and bekc's Python package maps a failed command with (`bekc config
// --json`, which python/bekc/_interface.py is generated from; docs/cli.md,
// "Exit codes").
#pragma once

#include <string_view>

#include "util/error.hpp"

namespace bekc {

struct ExitCodeRow {
    ErrorKind kind;
    std::string_view name;  // --json's "error.kind"
    int code;
    std::string_view meaning;  // a phrase: "usage error"
};

// Interrupted has no row: bekc dies of the signal (exit 128 + the signal).
inline constexpr ExitCodeRow kExitCodeRows[] = {
    {ErrorKind::Source, "source", kExitSourceError, "the kernel source failed to scan or compile"},
    {ErrorKind::Usage, "usage", kExitUsage, "usage error"},
    {ErrorKind::Toolchain, "toolchain", kExitToolchain,
     "nvcc or the host compiler is missing or failed to run"},
    {ErrorKind::Cache, "cache", kExitCache,
     "the cache could not be read or written, or standard output could not be written"},
    {ErrorKind::Internal, "internal", kExitInternal, "internal error"},
};

// The row of `kind`; nullptr for Interrupted.
const ExitCodeRow* exit_code_row(ErrorKind kind);

}  // namespace bekc
