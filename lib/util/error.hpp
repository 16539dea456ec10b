// The one exception type of the fatal path, caught once in main().
#pragma once

#include <stdexcept>
#include <string>

namespace bekc {

// Exit codes, documented in `bekc --help`.
enum ExitCode : int {
    kExitOk = 0,
    kExitSourceError = 1,  // the user's code failed to compile or a spec is wrong
    kExitUsage = 2,        // bad command line
    kExitToolchain = 3,    // nvcc or the host compiler could not be found or run
    kExitCache = 4,        // the cache could not be read or written
    kExitInternal = 70,    // a bug in bekc
};

class FatalError : public std::runtime_error {
  public:
    FatalError(std::string message, int exit_code)
        : std::runtime_error(std::move(message)), exit_code_(exit_code) {}
    int exit_code() const { return exit_code_; }

  private:
    int exit_code_;
};

}  // namespace bekc
