// Test helper: a Runner (run/runner.hpp) that runs nothing. It answers the
// tools' probes, writes every file a command names as an output (a depfile
// listing the command's inputs, a placeholder for the rest), and records
// what the driver asked for, so lib/driver is tested with no compiler.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "run/runner.hpp"
#include "temp_dir.hpp"
#include "util/fs.hpp"

namespace bekc::test {

class FakeRunner final : public Runner {
  public:
    // One call of run(): its commands' descriptions and the jobs it allowed.
    struct Batch {
        std::vector<std::string> descriptions;
        int jobs = 0;
    };
    std::vector<Batch> batches;     // compiles and links (probes left out)
    std::vector<fs::path> written;  // write_file calls, in order
    int probes = 0;                 // --version and -print-multiarch
    int curl_runs = 0;              // the remote cache's requests, none answered
    int dryruns = 0;                // nvcc --dryrun, asked for a compile's phases
    // A command whose description contains this fails with exit 1, printing
    // `fail_output` (by default "fake: error: <description> failed").
    std::string fail_when;
    std::string fail_output;
    // How long a command "takes" (its result's wall_time): the first entry
    // whose text its description contains.
    std::vector<std::pair<std::string, double>> seconds;

    std::expected<void, Error> write_file(const fs::path& path, std::string_view content) override {
        written.push_back(path);
        return write_atomic(path, content);
    }

    std::vector<ProcessResult> run(const std::vector<Command>& commands, int jobs,
                                   const ProgressCallback& on_event,
                                   const ParallelOptions& options) override {
        std::vector<ProcessResult> results(commands.size());
        Batch batch{{}, jobs};
        bool failed = false;
        for (size_t i = 0; i < commands.size(); ++i) {
            const Command& c = commands[i];
            ProcessResult& r = results[i];
            if (failed && !options.keep_going) continue;  // NotRun, as run_parallel leaves them
            // One after the other, as the dry run: a command that may not
            // start when its turn comes never will.
            if (options.ready && options.ready(i) != Readiness::Start) continue;
            r.status = ProcessStatus::Exited;
            r.exit_code = 0;
            if (probe(c, r)) continue;
            batch.descriptions.push_back(c.description);
            if (on_event) on_event({ProgressEvent::Kind::Started, i, c, nullptr});
            if (!fail_when.empty() && c.description.find(fail_when) != std::string::npos) {
                r.exit_code = 1;
                r.output = fail_output.empty() ? "fake: error: " + c.description + " failed\n"
                                               : fail_output;
                failed = true;
            } else {
                make_outputs(c);
            }
            for (const auto& [part, secs] : seconds)
                if (c.description.find(part) != std::string::npos) {
                    r.wall_time = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::duration<double>(secs));
                    break;
                }
            if (on_event) on_event({ProgressEvent::Kind::Finished, i, c, &r});
        }
        if (!batch.descriptions.empty()) batches.push_back(std::move(batch));
        return results;
    }

    // Every description of every batch, in order.
    std::vector<std::string> all_descriptions() const {
        std::vector<std::string> out;
        for (const auto& b : batches)
            out.insert(out.end(), b.descriptions.begin(), b.descriptions.end());
        return out;
    }
    bool ran(const std::string& description_part) const {
        auto all = all_descriptions();
        return std::any_of(all.begin(), all.end(), [&](const std::string& d) {
            return d.find(description_part) != std::string::npos;
        });
    }

  private:
    bool probe(const Command& c, ProcessResult& r) {
        if (c.argv.size() == 2 && c.argv[1] == "--version") {
            r.output = "fake compiler 1.2.3\n";
        } else if (c.argv.size() == 2 && c.argv[1] == "-print-multiarch") {
            r.output = "x86_64-linux-gnu\n";
        } else if (c.argv.size() > 1 && c.argv[1] == "--dryrun") {
            r.output = "";  // nvcc's phases unknown: each CUDA compile stays one nvcc
            ++dryruns;
        } else if (!c.argv.empty() && fs::path(c.argv[0]).filename() == "nvidia-smi") {
            r.output = "";  // no GPU, whatever machine the tests run on
        } else if (!c.argv.empty() && fs::path(c.argv[0]).filename() == "curl") {
            r.exit_code = 7;  // curl's "failed to connect": no server answers
            ++curl_runs;
        } else {
            return false;
        }
        ++probes;
        return true;
    }

    static void make_outputs(const Command& c) {
        for (const auto& out : c.outputs) {
            std::string text = "fake output of " + c.description + "\n";
            if (out.size() > 2 && out.compare(out.size() - 2, 2, ".d") == 0) {
                // A compiler's depfile names its inputs; a linker's lists
                // nothing more ("OUT:").
                text = "out:";
                if (fs::path(out).filename() != "link.d")
                    for (const auto& in : c.inputs) text += " " + in;
                text += "\n";
            }
            test::write_file(out, text);
        }
    }
};

}  // namespace bekc::test
