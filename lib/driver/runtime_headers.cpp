#include "driver/runtime_headers.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "run/process.hpp"
#include "store/cache.hpp"
#include "store/hash.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"

namespace bekc {

namespace {

constexpr std::string_view kRuntimePrefix = "runtime/include/";

std::string headers_hash16() {
    return runtime_headers_hash().substr(0, 16);
}

std::string compiler_hash16(const RuntimeObjectRequest& r) {
    Sha256 h;
    h.update("bekc runtime object 1\n" + r.cxx_identity + "\n" + r.cxx_std + "\n");
    if (!r.cxx_env.empty()) h.update(r.cxx_env);  // empty: the same object as before
    return h.final_hex().substr(0, 16);
}

[[noreturn]] void cache_failure(const CacheError& e) {
    throw FatalError("bekc: error: " + e.message, kExitCache);
}

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
    return cache_root / CacheLayout::runtime_include(headers_hash16());
}

fs::path materialize_runtime_headers(const fs::path& cache_root) {
    Cache cache(cache_root);
    auto tree = cache.ensure_tree(
        CacheLayout::runtime_include(headers_hash16()),
        CacheLayout::named_lock("runtime." + headers_hash16()),
        [](const Staging& staging) -> std::expected<void, std::string> {
            for (const auto& f : embedded_files()) {
                if (f.path.substr(0, kRuntimePrefix.size()) != kRuntimePrefix) continue;
                auto w = staging.write(std::string(f.path.substr(kRuntimePrefix.size())), f.data);
                if (!w) return w;
            }
            return {};
        });
    if (!tree) cache_failure(tree.error());
    return *tree;
}

fs::path runtime_object_path(const RuntimeObjectRequest& r) {
    return r.cache_root / CacheLayout::runtime_object_dir(headers_hash16(), compiler_hash16(r)) /
           "bekc_rt.o";
}

fs::path ensure_runtime_object(const RuntimeObjectRequest& r, bool verbose) {
    Cache cache(r.cache_root);
    std::string compiler = compiler_hash16(r);
    auto tree = cache.ensure_tree(
        CacheLayout::runtime_object_dir(headers_hash16(), compiler),
        CacheLayout::named_lock("runtime." + headers_hash16() + "." + compiler),
        [&](const Staging& staging) -> std::expected<void, std::string> {
            // Compiled in this user's private directory, then moved in.
            auto dir = private_temp_dir("rt." + unique_suffix());
            if (!dir) return std::unexpected(dir.error());
            fs::path object = *dir / "bekc_rt.o";
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
                      object.string()};
            c.description = "c++ bekc/handler_rt.cpp";
            if (verbose) std::fprintf(stderr, "%s\n", display_command(c).c_str());
            ProcessResult done = run_process(c);
            if (!done.ok()) {
                std::error_code ec;
                fs::remove_all(*dir, ec);
                std::fputs(done.output.c_str(), stderr);
                // A full disk is the machine's problem, not the compiler's.
                bool full = done.output.find(std::strerror(ENOSPC)) != std::string::npos;
                throw FatalError("bekc: error: compiling bekc's handler support code with " +
                                     r.cxx + " failed (" + done.describe() + ")",
                                 full ? kExitCache : kExitToolchain);
            }
            auto moved = staging.move_in("bekc_rt.o", object);
            std::error_code ec;
            fs::remove_all(*dir, ec);
            return moved;
        });
    if (!tree) cache_failure(tree.error());
    return *tree / "bekc_rt.o";
}

}  // namespace bekc
