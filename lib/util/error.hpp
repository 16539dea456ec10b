// How bekc fails. CONTRIBUTING.md, "Errors", states the rule:
//  - An expected failure (a missing file, a full disk, a bad option value)
//    is a value: std::expected<T, Error>. The layer that fails says what
//    kind of failure it is; it never picks an exit code.
//  - The driver turns an Error it cannot recover from into a FatalError,
//    which main() catches once, prints and maps to the exit code.
//  - A bug in bekc throws InternalError (exit 70); nothing catches it but
//    main().
#pragma once

#include <expected>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bekc {

// Exit codes, documented in docs/cli.md ("Exit codes") and `bekc --help`.
enum ExitCode : int {
    kExitOk = 0,
    kExitSourceError = 1,  // the user's code failed to compile or a spec is wrong
    kExitUsage = 2,        // bad command line
    kExitToolchain = 3,    // nvcc or the host compiler could not be found or run
    kExitCache = 4,        // the cache could not be read or written
    kExitInternal = 70,    // a bug in bekc
};

// What failed, from the user's side: it alone chooses the exit code.
enum class ErrorKind {
    Source,     // the kernel source or a spec is wrong, or it failed to compile
    Usage,      // a bad option value or input
    Toolchain,  // nvcc or the host compiler is missing or cannot run
    Cache,      // the cache, or another file bekc writes, cannot be read or written
    Internal,   // a bug in bekc
    // A signal stopped the build (run/interrupt.hpp); exit 128 + signal,
    // though bekc then dies of the signal itself.
    Interrupted,
};

int exit_code_of(ErrorKind kind);

struct Error {
    ErrorKind kind = ErrorKind::Internal;
    // One sentence without the "bekc: error: " prefix; empty when the
    // diagnostics were printed already.
    std::string message;
    // The file the failure is in, and its 1-based line (0: the whole file).
    std::string file;
    int line = 0;
    // How to fix it; each is printed on its own line as "note: ...".
    std::vector<std::string> notes;
    int signal = 0;  // Interrupted only

    int exit_code() const;

    static Error make(ErrorKind kind, std::string message);
    // An Error about `file` (and its `line`, when known).
    static Error at(ErrorKind kind, std::string file, int line, std::string message);

    // `context` in front of the message: "--depfile: cannot write ...".
    Error& within(std::string_view context);
    // The same failure as the layer above sees it (a file bekc could not
    // write is a cache failure to the build), its file, line and notes kept.
    Error& as(ErrorKind seen_as);
    Error& note(std::string text);
    // "bekc: error: message", or "file:line: error: message" when the
    // error has a file ("bekc: message" when interrupted); then a line per
    // note. No final newline.
    std::string render() const;
};

// The short form for a return statement:
//   return fail(ErrorKind::Cache, "cannot write " + path.string());
inline std::unexpected<Error> fail(ErrorKind kind, std::string message) {
    return std::unexpected(Error::make(kind, std::move(message)));
}

// The fatal path: thrown by the driver only, caught once, in main().
class FatalError : public std::runtime_error {
  public:
    explicit FatalError(Error error)
        : std::runtime_error(error.render()), error_(std::move(error)) {}
    const Error& error() const { return error_; }
    int exit_code() const { return error_.exit_code(); }

  private:
    Error error_;
};

// A bug in bekc: a broken invariant, never a user's mistake.
class InternalError : public std::logic_error {
  public:
    explicit InternalError(const std::string& what) : std::logic_error("internal error: " + what) {}
};

}  // namespace bekc
