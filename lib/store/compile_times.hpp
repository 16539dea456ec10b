// How long each compile took the last time, kept in <cache>/timings.json, so
// that a build (or `bekc build <package dir>`) starts its longest compiles
// first (run/parallel.hpp, longest_first) and does not end waiting on one
// straggler.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/fs.hpp"

namespace bekc {

class CompileTimes {
  public:
    // Reads the memo (a missing or damaged one is empty).
    explicit CompileTimes(const fs::path& cache_root);

    // Seconds `what` (an input's absolute path, a package module) took last.
    std::optional<double> seconds(const std::string& what) const;
    void record(const std::string& what, double seconds);
    // Writes the memo back when something was recorded, keeping the most
    // recent kMaxEntries; a read-only cache only loses the ordering hint.
    void save() const;

    static constexpr size_t kMaxEntries = 4096;

  private:
    fs::path cache_root_;
    // what -> {"s": seconds, "n": order}; what else an entry holds (an
    // earlier bekc's "m", a module id) is dropped
    nlohmann::json memo_ = nlohmann::json::object();
    int64_t next_ = 0;
    bool changed_ = false;
};

}  // namespace bekc
