#include "driver/xla_headers.hpp"

#include <unistd.h>

#include <algorithm>

#include "diag/diagnostic.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

constexpr const char* kFfiHeader = "xla/ffi/api/ffi.h";

bool has_ffi_header(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / kFfiHeader, ec);
}

XlaHeaders named(const std::string& dir, const std::string& how) {
    if (dir.empty() || !has_ffi_header(dir))
        throw FatalError("bekc: error: " + how + " '" + dir + "' has no " + kFfiHeader +
                             "; name the directory that jax.ffi.include_dir() prints",
                         kExitUsage);
    return {resolved_path(dir), how, true};
}

// <prefix>/lib/python3.*/{site,dist}-packages/jaxlib/include, newest Python first.
std::optional<fs::path> jaxlib_under(const fs::path& prefix) {
    std::vector<fs::path> pythons;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(prefix / "lib", ec)) {
        std::string n = e.path().filename().string();
        if (n.rfind("python3", 0) == 0) pythons.push_back(e.path());
    }
    std::sort(pythons.rbegin(), pythons.rend());
    for (const auto& py : pythons)
        for (const char* packages : {"site-packages", "dist-packages"}) {
            fs::path inc = py / packages / "jaxlib" / "include";
            if (has_ffi_header(inc)) return inc;
        }
    return std::nullopt;
}

std::vector<std::string> split_path(const std::string& path) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= path.size()) {
        size_t colon = path.find(':', start);
        std::string part = path.substr(start, colon == std::string::npos ? colon : colon - start);
        if (!part.empty()) out.push_back(part);
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    return out;
}

}  // namespace

std::optional<XlaHeaders> find_xla_headers(const std::optional<std::string>& flag,
                                           const EnvLookup& env,
                                           const std::vector<fs::path>& site_dirs) {
    if (flag) return named(*flag, "--xla-include");
    if (auto dir = env("BEKC_XLA_INCLUDE")) return named(*dir, "$BEKC_XLA_INCLUDE");
    for (const auto& site : site_dirs) {
        fs::path inc = site / "jaxlib" / "include";
        if (has_ffi_header(inc))
            return XlaHeaders{resolved_path(inc), "jaxlib at " + inc.string(), false};
    }
    // Prefixes whose site-packages may hold jaxlib: the active virtualenv,
    // the prefix of every python3 on PATH (a venv's bin/python3 is a link
    // into /usr/bin, so its own directory is what counts, not the link's
    // target), and the user's ~/.local.
    std::vector<fs::path> prefixes;
    if (auto venv = env("VIRTUAL_ENV")) prefixes.emplace_back(*venv);
    if (auto path = env("PATH"))
        for (const auto& dir : split_path(*path))
            if (::access((fs::path(dir) / "python3").c_str(), X_OK) == 0)
                prefixes.push_back(fs::path(dir).parent_path());
    for (const char* system : {"/usr/local", "/usr"}) prefixes.emplace_back(system);
    if (auto home = env("HOME")) prefixes.push_back(fs::path(*home) / ".local");
    for (const auto& prefix : prefixes)
        if (auto inc = jaxlib_under(prefix))
            return XlaHeaders{resolved_path(*inc), "jaxlib at " + inc->string(), false};
    return std::nullopt;
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
