// JSON on standard output: a command's answer with --json, and the object a
// failed command gives instead when --json was asked for (docs/cli.md,
// "Scripting").
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace bekc::cli {

// One JSON object on one line of standard output (util/json_text.hpp: any
// bytes, paths that are not UTF-8 included).
void print_json(const nlohmann::ordered_json& value);

// Whether the command line asks for --json (before any "--").
bool json_requested(int argc, char** argv);

// While one is alive, everything written through `stderr` still reaches
// standard error and is also kept, so that a failure's JSON can carry the
// diagnostics bekc printed on the way. glibc lets a program assign `stderr`
// (its manual, "Standard Streams"); the copy is a stream of its own,
// unbuffered as standard error is.
class StderrCopy {
  public:
    StderrCopy();
    ~StderrCopy();
    StderrCopy(const StderrCopy&) = delete;
    StderrCopy& operator=(const StderrCopy&) = delete;

    const std::string& text() const { return text_; }

  private:
    std::string text_;
    FILE* saved_ = nullptr;
};

// The failure as one JSON object on standard output: `error` (the Error, or
// the first error diagnostic when its message was printed already),
// `exit_code`, the `diagnostics` read from `stderr_text`, and that text.
void print_failure_json(const Error& error, std::string_view stderr_text);

}  // namespace bekc::cli
