#include "driver/runtime_headers.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "run/process.hpp"
#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "store/lock.hpp"
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

fs::path runtime_object_path(const RuntimeObjectRequest& r) {
    Sha256 h;
    h.update("bekc runtime object 1\n" + r.cxx_identity + "\n" + r.cxx_std + "\n");
    return runtime_include_dir(r.cache_root).parent_path() / "obj" / h.final_hex().substr(0, 16) /
           "bekc_rt.o";
}

fs::path ensure_runtime_object(const RuntimeObjectRequest& r, bool verbose) {
    const fs::path object = runtime_object_path(r);
    std::error_code ec;
    if (fs::is_regular_file(object, ec)) return object;
    auto lock = FileLock::acquire(object.parent_path() / "lock", std::chrono::minutes(5));
    if (!lock) throw FatalError("bekc: error: " + lock.error().message, kExitCache);
    if (fs::is_regular_file(object, ec)) return object;  // built while we waited
    // Staged under tmp/, which bekc cleans by age should this process die.
    const fs::path staging = r.cache_root / "tmp" / ("bekc_rt." + unique_suffix() + ".o");
    fs::create_directories(staging.parent_path(), ec);
    Command c;
    // The library's standard, fixed optimisation: the code only checks call frames.
    c.argv = {r.cxx,
              "-std=" + r.cxx_std,
              "-O2",
              "-fPIC",
              "-fvisibility=hidden",
              "-I" + r.include.string(),
              "-c",
              (r.include / "bekc" / "handler_rt.cpp").string(),
              "-o",
              staging.string()};
    c.description = "c++ bekc/handler_rt.cpp";
    if (verbose) std::fprintf(stderr, "%s\n", display_command(c).c_str());
    ProcessResult done = run_process(c);
    if (!done.ok()) {
        fs::remove(staging, ec);
        std::fputs(done.output.c_str(), stderr);
        throw FatalError("bekc: error: compiling bekc's handler support code with " + r.cxx +
                             " failed (" + done.describe() + ")",
                         kExitToolchain);
    }
    fs::rename(staging, object, ec);
    if (ec)
        throw FatalError("bekc: error: cannot publish " + object.string() + ": " + ec.message(),
                         kExitCache);
    return object;
}

}  // namespace bekc
