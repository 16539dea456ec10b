// --trace FILE of a command (run/trace.hpp): the trace begins as the command
// starts, once FILE is known to be writable, and is written when the command
// ends, a failed one too (a failed build's trace shows where it failed).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "run/trace.hpp"
#include "util/error.hpp"

namespace bekc::cli {

class TraceFile {
  public:
    // Nothing when `path` is unset; exit 2 (fatal) when it cannot be written.
    void start(const std::optional<std::string>& path, std::string name);

    // The trace the command records into; null without --trace.
    Trace* trace() const { return trace_.get(); }

    // The command's own span, from start() to now, with `args`, and the file
    // written; exit 2 when it cannot be.
    void finish(Trace::Args args);

    // On the fatal path: the same with the error in `args`; a file that
    // cannot be written is a note of `error`.
    void fail(Error& error, Trace::Args args);

  private:
    std::expected<void, Error> write(Trace::Args args);

    std::unique_ptr<Trace> trace_;
    fs::path path_;
};

}  // namespace bekc::cli
