// Where XLA's FFI headers (xla/ffi/api/ffi.h) are, for kernel sources that
// include them themselves, directly or through brainevent/dtypes.h or
// brainevent/ffi_compat.h. bekc's own handlers never include them.
#pragma once

#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "scan/includes.hpp"
#include "util/env.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

struct XlaHeaders {
    fs::path dir;                  // canonical: the same install always gives the same key
    std::string how;               // "--xla-include", "$BEKC_XLA_INCLUDE" or the jaxlib found
    bool explicit_choice = false;  // named by the user, not found by looking
};

// In order: `--xla-include DIR`, `$BEKC_XLA_INCLUDE`, then the include directory
// of an installed jaxlib, found without running Python: `<dir>/jaxlib/include`
// for each of `site_dirs` (a package's own site-packages, so that a package
// build finds the jaxlib installed beside it with no virtualenv active), then
// the environments of toolchain/python_env.hpp (the active virtualenv, conda
// environment, each `python3` on $PATH, ...). A named directory without
// xla/ffi/api/ffi.h is a Usage error.
std::expected<std::optional<XlaHeaders>, Error> find_xla_headers(
    const std::optional<std::string>& flag, const EnvLookup& env,
    const std::vector<fs::path>& site_dirs = {});

// The headers that need XLA's FFI headers on the include path.
bool needs_xla_headers(const IncludeDirective& include);

// The error for a source that includes XLA's FFI headers when none were found:
// the file and line of the #include, and the three ways to name them.
std::string missing_xla_headers_message(const IncludeDirective& include,
                                        const std::string& source_text);

}  // namespace bekc
