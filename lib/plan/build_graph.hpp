// The build graph: every step of a build as one value. Writing the wrappers,
// writing the runtime headers and compiling the runtime object when the
// cache lacks them, each compile, the link. Each step names what it reads and
// writes and which steps must finish first. `bekc build` executes it through
// a Runner (run/runner.hpp), `--dry-run` and `-v` print it step by step, and
// the direct key is derived from it (graph/keys.hpp). Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/command.hpp"
#include "plan/compile_plan.hpp"
#include "util/fs.hpp"

namespace bekc {

enum class StepKind {
    WriteWrapper,    // a generated translation unit (a wrapper, the entry points), written
                     // into the build directory
    RuntimeHeaders,  // bekc's embedded headers, written into the cache once
    RuntimeObject,   // bekc_rt.o, compiled once per host compiler, then kept in the cache
    Compile,         // a compiler run: a source's wrapper, or the entry points
    NvccPhase,       // one phase of a CUDA source's compile (plan/nvcc_phases.hpp)
    Link,            // the objects into the library
};

// "write-wrapper", "runtime-headers", "runtime-object", "compile",
// "nvcc-phase", "link".
std::string_view step_kind_name(StepKind kind);

struct Step {
    StepKind kind = StepKind::Compile;
    // Indices of the steps that must finish before this one starts.
    std::vector<size_t> after;
    // RuntimeObject, Compile and Link: the process, with its inputs and
    // outputs. WriteWrapper and RuntimeHeaders: `outputs` names what is
    // written and `argv` is empty.
    Command command;
    std::string content;  // WriteWrapper: the file's text
    // WriteWrapper: the file whose bytes are written instead of `content`,
    // read when the step runs (one a step before it wrote).
    fs::path copy_from;
    // Compile, and an nvcc phase that preprocesses: the Make dependencies
    // the compiler writes. Empty for the host compile of a split nvcc
    // compile, whose preprocessors write them instead.
    fs::path depfile;
    // One phase of nvcc's (plan/nvcc_phases.hpp: "cicc", "ptxas",
    // "host-compile", ...); empty for every other step.
    std::string phase;
    // Compile and NvccPhase: the index of the plan unit (the input) it
    // compiles; unset for the entry points.
    std::optional<size_t> unit;
    bool runs() const { return !command.argv.empty(); }
};

struct BuildGraph {
    std::vector<Step> steps;  // in an order that respects `after`
    fs::path library;
    std::optional<fs::path> link_depfile;  // written by the step that links, when asked for
};

struct GraphRequest {
    // The compiles and the link (plan/compile_plan.hpp); `plan.launcher`
    // goes in front of every compile, the runtime object's included.
    PlanRequest plan;
    // One wrapper text per plan unit, written to the unit's path first.
    std::vector<std::string> wrapper_texts;
    // The entry points' text, written to plan.handlers.
    std::string handlers_text;
    // The cache has no runtime headers at plan.runtime_include yet.
    bool write_runtime_headers = false;
    // The cache has no bekc_rt.o at plan.runtime_object yet: it is compiled
    // here (in the build directory), then kept in the cache.
    std::optional<fs::path> compile_runtime_object;
};

BuildGraph make_build_graph(const GraphRequest& request);

// The handler support code's compile (bekc/handler_rt.cpp under
// `runtime_include`), the library's standard and a fixed -O2: the code only
// checks call frames.
Command runtime_object_command(const Tool& cxx, const std::string& cxx_std,
                               const fs::path& runtime_include, const fs::path& object,
                               const std::optional<fs::path>& launcher);

// One line for a step: the shell line of a process (plan/command.hpp,
// display_command), a `#` comment for what bekc writes itself. --dry-run
// prints every step's, -v each one's as it starts.
std::string describe_step(const Step& step);

}  // namespace bekc
