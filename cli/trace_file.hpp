// --trace FILE of a command (run/trace.hpp): the trace begins as the command
// starts, once FILE is known to be writable, and is written when the command
// ends, a failed one too (a failed build's trace shows where it failed).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"

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

    // start(path, name), then `command` given the trace, then finish() with
    // its exit code: a command whose children write traces of their own.
    int run(const std::optional<std::string>& path, std::string name,
            const std::function<int(Trace*)>& command);

  private:
    std::expected<void, Error> write(Trace::Args args);

    std::unique_ptr<Trace> trace_;
    fs::path path_;
};

// `--trace FILE` of a command that runs child builds (`bekc replay`, `bekc
// pack`), whose help says what its lanes hold, and the command's action:
// `run` with the trace, the file written when it ends or fails.
Action traced_command(CLI::App& cmd, std::optional<std::string>& path, const std::string& lanes,
                      std::function<int(TraceFile&)> run);

}  // namespace bekc::cli
