// What a compiler says about itself, for cache keys, manifests and the
// search directories, without running it on a hit: each question (its
// version, its multiarch triplet) is asked once per binary identity (path,
// size, mtime) and remembered in <cache>/tools.json, which a build reads once.
// An answer the own cache lacks is taken from a read-only cache's tools.json
// (store/cache_layers.hpp) before the tool is asked, so a hit from one runs
// nothing either; it is trusted as that cache's writers are.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/runner.hpp"
#include "toolchain/tools.hpp"

namespace bekc {

class ToolFacts {
  public:
    // Reads the memo of the cache at `cache_root` (a missing or damaged one
    // is empty); questions not in it are asked through `runner`.
    // `read_only`: the read-only caches, whose memos are read when needed,
    // in order, and never written.
    ToolFacts(const fs::path& cache_root, Runner& runner, std::vector<fs::path> read_only = {});
    // Writes the memo back when something new was asked (a read-only cache
    // only means asking again next time).
    ~ToolFacts();

    // `TOOL --version`'s number (toolchain/tools.hpp, tool_version).
    std::string version(const Tool& tool);
    // `CXX -print-multiarch` (toolchain/tools.hpp, tool_multiarch).
    std::string multiarch(const Tool& cxx);

  private:
    std::string remembered(const std::string& name, const std::function<std::string()>& ask);

    // The answer to `name` in the read-only caches' memos, read once each.
    std::optional<std::string> from_read_only(const std::string& name);

    fs::path cache_root_;
    Runner& runner_;
    std::vector<fs::path> read_only_;
    std::vector<nlohmann::json> read_only_memos_;  // read_only_'s, as far as read
    nlohmann::json memo_ = nlohmann::json::object();
    bool changed_ = false;
};

}  // namespace bekc
