// What a build says on stderr while it runs: warnings (unless -q) and, with
// -v, what it is doing; diagnostics, too. Every phase of driver/build.hpp reports through one.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "prep/build_options.hpp"

namespace bekc {

class Reporter {
  public:
    // `captured`: where the messages go instead of stderr (the in-process
    // lookup, lookup/bekc_lookup.cpp, hands them to Python), or null.
    explicit Reporter(const BuildOptions& o, std::string* captured = nullptr)
        : quiet_(o.quiet), verbose_(o.verbose), captured_(captured) {}
    void warn(const std::string& msg) const {
        if (!quiet_) print("bekc: warning: " + msg + "\n");
    }
    void info(const std::string& msg) const {
        if (verbose_) print("bekc: " + msg + "\n");
    }
    // Text as it is, whatever -q says: diagnostics in compiler format.
    void print(const std::string& text) const {
        if (captured_)
            *captured_ += text;
        else
            std::fputs(text.c_str(), stderr);
    }

  private:
    bool quiet_, verbose_;
    std::string* captured_;
};

using BuildClock = std::chrono::steady_clock;

inline double seconds_since(BuildClock::time_point t) {
    return std::chrono::duration<double>(BuildClock::now() - t).count();
}

}  // namespace bekc
