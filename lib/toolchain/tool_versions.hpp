// What a compiler says about itself, for cache keys, manifests and the
// search directories, without running it on a hit: each question (its
// version, its multiarch triplet) is asked once per binary identity (path,
// size, mtime) and remembered in <cache>/tools.json, which a build reads once.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "run/runner.hpp"
#include "toolchain/tools.hpp"

namespace bekc {

class ToolFacts {
  public:
    // Reads the memo of the cache at `cache_root` (a missing or damaged one
    // is empty); questions not in it are asked through `runner`.
    ToolFacts(const fs::path& cache_root, Runner& runner);
    // Writes the memo back when something new was asked (a read-only cache
    // only means asking again next time).
    ~ToolFacts();

    // `TOOL --version`'s number (toolchain/tools.hpp, tool_version).
    std::string version(const Tool& tool);
    // `CXX -print-multiarch` (toolchain/tools.hpp, tool_multiarch).
    std::string multiarch(const Tool& cxx);

  private:
    std::string remembered(const std::string& name, const std::function<std::string()>& ask);

    fs::path cache_root_;
    Runner& runner_;
    nlohmann::json memo_ = nlohmann::json::object();
    bool changed_ = false;
};

}  // namespace bekc
