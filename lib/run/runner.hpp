// The seam between a planned build and the machine: the driver executes its
// build graph (plan/build_graph.hpp) only through a Runner. The real one
// spawns processes and writes files; the dry-run one does neither; tests
// give their own (tests/helpers/fake_runner.hpp) and need no compiler.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "run/parallel.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace bekc {

class Runner {
  public:
    virtual ~Runner() = default;

    // Writes a generated file (a wrapper) atomically.
    virtual std::expected<void, Error> write_file(const fs::path& path,
                                                  std::string_view content) = 0;

    // Runs independent commands, at most `jobs` at once, with run_parallel's
    // contract: results in input order, no new start after a failure unless
    // options.keep_going; options.run.timeout limits each command.
    virtual std::vector<ProcessResult> run(const std::vector<Command>& commands, int jobs,
                                           const ProgressCallback& on_event = {},
                                           const ParallelOptions& options = {}) = 0;

    // Runs one command and waits for it (a probe such as `nvcc --version`).
    ProcessResult run_one(const Command& command);

    // Whether this runner really runs anything: a dry run reads no outputs.
    virtual bool executes() const { return true; }
};

// vfork/exec (run/process.hpp) and util/fs's atomic writes.
class ProcessRunner final : public Runner {
  public:
    std::expected<void, Error> write_file(const fs::path& path, std::string_view content) override;
    std::vector<ProcessResult> run(const std::vector<Command>& commands, int jobs,
                                   const ProgressCallback& on_event,
                                   const ParallelOptions& options) override;
};

// --dry-run: every command "succeeds" without running, nothing is written.
// What the build would do is printed by the executor, step by step, from the
// same graph a real build runs.
class DryRunRunner final : public Runner {
  public:
    std::expected<void, Error> write_file(const fs::path&, std::string_view) override { return {}; }
    std::vector<ProcessResult> run(const std::vector<Command>& commands, int jobs,
                                   const ProgressCallback& on_event,
                                   const ParallelOptions& options) override;
    bool executes() const override { return false; }
};

}  // namespace bekc
