// Test helpers: what a real build leaves in a cache staging directory, with a
// library of known bytes, so cache tests need no compiler.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "store/hash.hpp"
#include "store/key.hpp"
#include "temp_dir.hpp"

namespace bekc::test {

// A valid cache key derived from `seed`.
inline std::string fake_key(const std::string& seed) {
    return KeyBuilder("test").add("seed", seed).digest();
}

// Writes lib<name>.so with `library_bytes`, then both manifests (last, as a
// real build does), into `dir`.
inline void write_fake_entry(const std::filesystem::path& dir, const std::string& key,
                             const std::string& name, const std::string& library_bytes) {
    std::string library = "lib" + name + ".so";
    write_file(dir / library, library_bytes);
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
    write_file(dir / "manifest.json", manifest.dump(2));
    manifest["targets"][0]["symbol"] = "bekc_ffi_vector_add_nograph";
    manifest["targets"][0]["command_buffer_compatible"] = false;
    write_file(dir / "manifest.no-cuda-graph.json", manifest.dump(2));
}

}  // namespace bekc::test
