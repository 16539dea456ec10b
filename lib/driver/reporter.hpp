// What a build says on stderr while it runs: warnings (unless -q) and, with
// -v, what it is doing. Every phase of driver/build.hpp reports through one.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "driver/build_options.hpp"

namespace bekc {

class Reporter {
  public:
    explicit Reporter(const BuildOptions& o) : quiet_(o.quiet), verbose_(o.verbose) {}
    void warn(const std::string& msg) const {
        if (!quiet_) std::fprintf(stderr, "bekc: warning: %s\n", msg.c_str());
    }
    void info(const std::string& msg) const {
        if (verbose_) std::fprintf(stderr, "bekc: %s\n", msg.c_str());
    }

  private:
    bool quiet_, verbose_;
};

using BuildClock = std::chrono::steady_clock;

inline double seconds_since(BuildClock::time_point t) {
    return std::chrono::duration<double>(BuildClock::now() - t).count();
}

}  // namespace bekc
