// Test helpers: what a real build leaves in a cache staging directory, with a
// library of known bytes, so cache tests need no compiler.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/cache.hpp"
#include "store/hash.hpp"
#include "store/key.hpp"
#include "temp_dir.hpp"

namespace bekc::test {

// A valid cache key derived from `seed`.
inline std::string fake_key(const std::string& seed) {
    return KeyBuilder("test").add("seed", seed).digest();
}

// The files of a fake entry, in the order a real build writes them: the
// library first, the manifests last.
inline std::vector<std::pair<std::string, std::string>> fake_entry_files(
    const std::string& key, const std::string& name, const std::string& library_bytes) {
    std::string library = "lib" + name + ".so";
    nlohmann::json target = {{"name", name + ".vector_add"},
                             {"symbol", "bekc_ffi_vector_add"},
                             {"function", "vector_add"},
                             {"platform", "cpu"},
                             {"arg_spec", {"arg", "arg", "ret"}},
                             {"num_args", 2},
                             {"num_rets", 1},
                             {"attrs", nlohmann::json::array()},
                             {"command_buffer_compatible", true},
                             {"source", "kernels.cpp:3"}};
    nlohmann::json manifest = {{"schema", 1},        {"bekc_version", "0.1.0"},
                               {"name", name},       {"key", key},
                               {"library", library}, {"library_sha256", sha256_hex(library_bytes)},
                               {"targets", {target}}};
    std::vector<std::pair<std::string, std::string>> files;
    files.emplace_back(library, library_bytes);
    files.emplace_back("dependencies.json", R"({"headers": []})");
    files.emplace_back("manifest.json", manifest.dump(2));
    manifest["targets"][0]["symbol"] = "bekc_ffi_vector_add_nograph";
    manifest["targets"][0]["command_buffer_compatible"] = false;
    files.emplace_back("manifest.no-cuda-graph.json", manifest.dump(2));
    return files;
}

// Writes the fake entry into a plain directory `dir` (created when missing),
// with ordinary file writes: for planting entries behind the cache's back.
inline void write_fake_entry(const std::filesystem::path& dir, const std::string& key,
                             const std::string& name, const std::string& library_bytes) {
    for (const auto& [file, content] : fake_entry_files(key, name, library_bytes))
        write_file(dir / file, content);
}

// Writes the fake entry into a builder's staging directory, through
// Staging::write as a real build does.
inline void write_fake_entry(const Staging& staging, const std::string& key,
                             const std::string& name, const std::string& library_bytes) {
    for (const auto& [file, content] : fake_entry_files(key, name, library_bytes)) {
        if (auto w = staging.write(file, content); !w) throw std::runtime_error(w.error().message);
    }
}

}  // namespace bekc::test
