#include "toolchain/xla_headers.hpp"

#include "diag/diagnostic.hpp"
#include "toolchain/python_env.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

constexpr const char* kFfiHeader = "xla/ffi/api/ffi.h";

bool has_ffi_header(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / kFfiHeader, ec);
}

std::expected<XlaHeaders, Error> named(const std::string& dir, const std::string& how) {
    if (dir.empty() || !has_ffi_header(dir))
        return fail(ErrorKind::Usage, how + " '" + dir + "' has no " + kFfiHeader +
                                          "; name the directory that jax.ffi.include_dir() prints");
    return XlaHeaders{resolved_path(dir), how, true};
}

// <site>/jaxlib/include of the first site-packages directory that has it.
std::optional<fs::path> jaxlib_in(const std::vector<fs::path>& sites) {
    for (const auto& site : sites) {
        fs::path inc = site / "jaxlib" / "include";
        if (has_ffi_header(inc)) return inc;
    }
    return std::nullopt;
}

}  // namespace

std::expected<std::optional<XlaHeaders>, Error> find_xla_headers(
    const std::optional<std::string>& flag, const EnvLookup& env,
    const std::vector<fs::path>& site_dirs) {
    if (flag) return named(*flag, "--xla-include");
    if (auto dir = env("BEKC_XLA_INCLUDE")) return named(*dir, "$BEKC_XLA_INCLUDE");
    std::optional<fs::path> inc = jaxlib_in(site_dirs);
    // Then the Python environments in play (toolchain/python_env.hpp).
    for (const auto& prefix : python_prefixes(env)) {
        if (inc) break;
        inc = jaxlib_in(site_packages_dirs(prefix));
    }
    if (!inc) return std::nullopt;
    return XlaHeaders{resolved_path(*inc), "jaxlib at " + inc->string(), false};
}

bool needs_xla_headers(const IncludeDirective& include) {
    const std::string& h = include.header;
    return h.rfind("xla/ffi/", 0) == 0 || h == "brainevent/dtypes.h" ||
           h == "brainevent/ffi_compat.h";
}

std::string missing_xla_headers_message(const IncludeDirective& include,
                                        const std::string& source_text) {
    Diagnostic d = make_error(
        source_text, include.where,
        "'" + include.header + "' needs XLA's FFI headers, and bekc found none",
        "name them in one of three ways: pass --xla-include DIR; set $BEKC_XLA_INCLUDE=DIR; "
        "or install jaxlib for the python3 on PATH or in the active virtualenv (pip install "
        "jaxlib). DIR is what `python3 -c 'import jax; print(jax.ffi.include_dir())'` prints");
    return d.render();
}

}  // namespace bekc
