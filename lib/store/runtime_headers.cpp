#include "store/runtime_headers.hpp"

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

std::string compiler_hash16(const RuntimeObjectId& id) {
    Sha256 h;
    h.update("bekc runtime object 1\n" + id.compiler + "\n" + id.cxx_std + "\n");
    if (!id.compiler_env.empty()) h.update(id.compiler_env);  // empty: the same object as before
    return h.final_hex().substr(0, 16);
}

fs::path object_dir(const RuntimeObjectId& id) {
    return CacheLayout::runtime_object_dir(headers_hash16(), compiler_hash16(id));
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

std::expected<fs::path, Error> materialize_runtime_headers(const fs::path& cache_root) {
    Cache cache(cache_root);
    auto tree = cache.ensure_tree(
        CacheLayout::runtime_include(headers_hash16()),
        CacheLayout::runtime_include_lock(headers_hash16()),
        [](const Staging& staging) -> std::expected<void, Error> {
            for (const auto& f : embedded_files()) {
                if (f.path.substr(0, kRuntimePrefix.size()) != kRuntimePrefix) continue;
                auto w = staging.write(std::string(f.path.substr(kRuntimePrefix.size())), f.data);
                if (!w) return w;
            }
            return {};
        });
    if (!tree) return std::unexpected(tree.error());
    return *tree;
}

bool runtime_headers_ready(const fs::path& cache_root) {
    return Cache(cache_root).tree_ready(CacheLayout::runtime_include(headers_hash16()));
}

fs::path runtime_object_path(const RuntimeObjectId& id) {
    return id.cache_root / object_dir(id) / "bekc_rt.o";
}

bool runtime_object_ready(const RuntimeObjectId& id) {
    return Cache(id.cache_root).tree_ready(object_dir(id));
}

std::expected<void, Error> publish_runtime_object(const RuntimeObjectId& id,
                                                  const fs::path& built) {
    Cache cache(id.cache_root);
    auto tree = cache.ensure_tree(
        object_dir(id), CacheLayout::runtime_object_lock(headers_hash16(), compiler_hash16(id)),
        [&](const Staging& staging) { return staging.move_in("bekc_rt.o", built); });
    if (!tree) return std::unexpected(tree.error());
    return {};
}

}  // namespace bekc
