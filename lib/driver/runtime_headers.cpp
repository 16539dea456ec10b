#include "driver/runtime_headers.hpp"

#include <unistd.h>

#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

constexpr std::string_view kRuntimePrefix = "runtime/include/";

}  // namespace

const std::string& runtime_headers_hash() {
    static const std::string hash = [] {
        Sha256 h;
        for (const auto& f : embedded_files()) {
            if (f.path.substr(0, kRuntimePrefix.size()) != kRuntimePrefix) continue;
            h.update(std::to_string(f.path.size()) + ":");
            h.update(f.path);
            h.update(std::to_string(f.data.size()) + ":");
            h.update(f.data);
        }
        return h.final_hex();
    }();
    return hash;
}

fs::path runtime_include_dir(const fs::path& cache_root) {
    return cache_root / "runtime" / runtime_headers_hash().substr(0, 16) / "include";
}

fs::path materialize_runtime_headers(const fs::path& cache_root) {
    fs::path include = runtime_include_dir(cache_root);
    fs::path dir = include.parent_path();
    std::error_code ec;
    if (fs::is_directory(include, ec)) return include;
    // Written in a private directory, then renamed: concurrent builds either
    // see the complete tree or none.
    fs::path staging = cache_root / "tmp" / ("runtime." + unique_suffix());
    fs::create_directories(staging / "include", ec);
    if (ec)
        throw FatalError("bekc: error: cannot create " + staging.string() + ": " + ec.message(),
                         kExitCache);
    for (const auto& f : embedded_files()) {
        if (f.path.substr(0, kRuntimePrefix.size()) != kRuntimePrefix) continue;
        fs::path target = staging / "include" / std::string(f.path.substr(kRuntimePrefix.size()));
        fs::create_directories(target.parent_path(), ec);
        write_file_atomic(target, f.data);
    }
    fs::create_directories(dir.parent_path(), ec);
    if (::rename(staging.c_str(), dir.c_str()) != 0) {
        // Another process won the race; its tree is identical.
        fs::remove_all(staging, ec);
    }
    if (!fs::is_directory(include, ec))
        throw FatalError("bekc: error: cannot create " + include.string(), kExitCache);
    return include;
}

}  // namespace bekc
