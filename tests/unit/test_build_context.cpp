// BuildContext (lib/driver/build.hpp) is the one way a build reaches the
// environment, the programs on PATH and the processes it starts: with a
// stubbed context, GPU detection, a package build and the dependency check
// see only the stubs.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../helpers/driver_fixture.hpp"
#include "../helpers/env.hpp"
#include "../helpers/temp_dir.hpp"
#include "driver/build.hpp"
#include "graph/keys.hpp"
#include "package/package_build.hpp"
#include "store/layout.hpp"
#include "toolchain/compiler_env.hpp"
#include "toolchain/gpu_detect.hpp"
#include "util/error.hpp"

using namespace bekc;

namespace {

// Runs nothing: records each command and the options it came with, and
// answers each with `exit_code` and `output`.
class RecordingRunner final : public Runner {
  public:
    std::vector<Command> commands;
    std::vector<ParallelOptions> options;
    int exit_code = 0;
    std::string output;

    std::expected<void, Error> write_file(const fs::path& path, std::string_view content) override {
        return write_atomic(path, content);
    }
    std::vector<ProcessResult> run(const std::vector<Command>& batch, int,
                                   const ProgressCallback& on_event,
                                   const ParallelOptions& with) override {
        std::vector<ProcessResult> results(batch.size());
        for (size_t i = 0; i < batch.size(); ++i) {
            commands.push_back(batch[i]);
            options.push_back(with);
            results[i].status = ProcessStatus::Exited;
            results[i].exit_code = exit_code;
            results[i].output = output;
            if (on_event) {
                on_event({ProgressEvent::Kind::Started, i, batch[i], nullptr});
                on_event({ProgressEvent::Kind::Finished, i, batch[i], &results[i]});
            }
        }
        return results;
    }
};

// Finds only the programs named in `programs`, under /stub/bin.
ToolLookup stub_tools(std::vector<std::string> programs) {
    ToolLookup tools;
    tools.env = test::env_of({});
    tools.find = [programs](const std::string& name) -> std::optional<fs::path> {
        for (const auto& p : programs)
            if (p == name) return fs::path("/stub/bin") / name;
        return std::nullopt;
    };
    tools.executable = [](const fs::path&) { return true; };
    return tools;
}

// What the kernel lists under /proc/driver/nvidia for one GPU.
fs::path fake_proc_driver(const fs::path& dir) {
    test::write_file(dir / "version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module 580.65\n");
    test::write_file(dir / "gpus/0000:01:00.0/information", "Model: NVIDIA H100 80GB HBM3\n");
    return dir;
}

std::vector<int> numbers(const std::vector<Arch>& archs) {
    std::vector<int> out;
    for (const auto& a : archs) out.push_back(a.number);
    return out;
}

}  // namespace

TEST_CASE("context: GPU detection asks nvidia-smi through the runner and the tool lookup",
          "[context][gpu]") {
    test::TempDir tmp;
    const fs::path proc = fake_proc_driver(tmp / "proc");
    RecordingRunner runner;
    runner.output = "9.0\n8.0\n";
    GpuDetection d = detect_gpus(tmp / "cache", runner, stub_tools({"nvidia-smi"}), proc);
    REQUIRE(runner.commands.size() == 1);
    CHECK(runner.commands[0].argv == std::vector<std::string>{"/stub/bin/nvidia-smi",
                                                              "--query-gpu=compute_cap",
                                                              "--format=csv,noheader"});
    CHECK(runner.options[0].run.timeout == std::chrono::seconds(20));
    CHECK(d.how == "nvidia-smi");
    CHECK(numbers(d.archs) == std::vector<int>{80, 90});

    // Remembered in gpus.json: the next build runs nothing.
    GpuDetection again = detect_gpus(tmp / "cache", runner, stub_tools({"nvidia-smi"}), proc);
    CHECK(runner.commands.size() == 1);
    CHECK(again.how == "remembered from nvidia-smi");
    CHECK(numbers(again.archs) == std::vector<int>{80, 90});
}

TEST_CASE("context: GPU detection finds nvidia-smi only where the tool lookup does",
          "[context][gpu]") {
    test::TempDir tmp;
    RecordingRunner runner;
    GpuDetection d =
        detect_gpus(tmp / "cache", runner, stub_tools({}), fake_proc_driver(tmp / "proc"));
    CHECK(runner.commands.empty());
    CHECK(d.archs.empty());
    CHECK(d.how == "nvidia-smi not found on PATH");

    GpuDetection none =
        detect_gpus(tmp / "cache", runner, stub_tools({"nvidia-smi"}), tmp / "no-driver");
    CHECK(runner.commands.empty());
    CHECK(none.how == "no NVIDIA driver (" + (tmp / "no-driver").string() + " is missing)");
}

TEST_CASE(
    "context: a package build runs its modules through the context's runner, "
    "with the context's environment",
    "[context][package]") {
    test::TempDir tmp;
    const fs::path pkg = tmp / "pkg";
    test::write_file(pkg / "include/brainevent/common.h", "#pragma once\n");
    test::write_file(pkg / "_a/k.py",
                     "load_cuda_file(Path(__file__).with_suffix('.cu'), name='ka')\n");
    test::write_file(pkg / "_a/k.cu", "");
    test::write_file(pkg / "_b/m.py",
                     "load_cpp_file(Path(__file__).with_suffix('.cpp'), name='mb')\n");
    test::write_file(pkg / "_b/m.cpp", "");
    fs::create_directories(tmp / "xla/xla/ffi/api");
    test::write_file(tmp / "xla/xla/ffi/api/ffi.h", "");
    BuildOptions o;
    o.inputs = {pkg.string()};
    o.quiet = true;
    o.jobs = 2;
    RecordingRunner runner;
    runner.output = "{\"manifest\": \"/m.json\", \"cache_hit\": true}\n";
    BuildContext ctx{runner};
    ctx.env = test::env_of({{"BEKC_CACHE_DIR", (tmp / "cache").string()},
                            {"BEKC_XLA_INCLUDE", (tmp / "xla").string()}});
    CHECK(run_package_build(o, ctx) == kExitOk);
    REQUIRE(runner.commands.size() == 2);
    // A failed module does not stop the others (make -k).
    CHECK(runner.options[0].keep_going);
    for (const auto& c : runner.commands) {
        const auto& a = c.argv;
        CHECK(std::find(a.begin(), a.end(), "--cache-dir=" + (tmp / "cache").string()) != a.end());
        CHECK(std::find(a.begin(), a.end(), "--xla-include=" + (tmp / "xla").string()) != a.end());
    }
    CHECK(fs::exists(tmp / "cache" / "timings.json"));
}

TEST_CASE("context: a package's children share a jobserver: make's, or the package's own",
          "[context][package]") {
    test::TempDir tmp;
    BuildOptions o;
    o.inputs = {tmp.path().string()};
    o.cache_dir = (tmp / "cache").string();
    test::write_file(tmp / "xla/xla/ffi/api/ffi.h", "");
    o.xla_include = (tmp / "xla").string();
    std::vector<PackageModule> modules = {{tmp / "k.cu", "k", "", "checked", {}}};
    using Overrides = std::vector<std::pair<std::string, std::string>>;
    // Under make: the children inherit make's MAKEFLAGS, and so its jobserver.
    auto under_make =
        package_commands(o, modules, "/bin/bekc", 4, std::nullopt,
                         test::env_of({{"MAKEFLAGS", "-j4 --jobserver-auth=fifo:/tmp/make-fifo"}}));
    CHECK(under_make[0].env_overrides == Overrides{});
    // The package's own: named in each child's MAKEFLAGS.
    const std::string own = "-j4 --jobserver-auth=fifo:/tmp/bekc-0/jobserver.x/fifo";
    auto served = package_commands(o, modules, "/bin/bekc", 4, own, test::env_of({}));
    CHECK(served[0].env_overrides == Overrides{{"MAKEFLAGS", own}});
    CHECK(served[0].slots == 1);
}

TEST_CASE("context: the compiler drivers' temporaries are judged by the context's TMPDIR",
          "[context][keys]") {
    test::TempDir tmp;
    const fs::path stub_tmp = tmp / "stub-tmp";
    fs::create_directories(stub_tmp);
    fs::create_directories(tmp / "build");
    const fs::path runtime = tmp / "cache/runtime/h/include";
    fs::create_directories(runtime);
    BuildInputs in;
    in.name = in.target_prefix = "k";
    in.cxx = Tool{"/usr/bin/g++", "/usr/bin/g++", 1, 2};
    const fs::path source = tmp / "k.cpp";
    test::write_file(source, "int x;\n");
    in.files = {SourceFile{source, false, "int x;\n", {}}};
    auto raw = [&](std::string_view name) -> std::optional<std::string> {
        if (name == "TMPDIR") return stub_tmp.string();
        return std::nullopt;
    };
    in.env = read_compiler_env(raw, false, tmp.path());
    CHECK(in.env.tmpdir == stub_tmp);
    test::write_file(tmp / "libuser.so", "user library");
    // An object g++ linked and deleted, in the stub's TMPDIR: not a dependency.
    const std::string temporary = (stub_tmp / "cc1.o").string(),
                      lib = (tmp / "libuser.so").string();
    ReportedDependencies deps{{source.string()}, {{temporary, temporary}, {lib, lib}}, true};
    DependencySet d = classify_dependencies(deps, in, "", runtime, tmp / "build").value();
    std::vector<std::string> hashed;
    for (const auto& [path, sha] : d.hashed) hashed.push_back(path);
    CHECK(hashed == std::vector<std::string>{lib});
    // Elsewhere, a missing link input is an error.
    in.env.tmpdir.reset();
    auto missing = classify_dependencies(deps, in, "", runtime, tmp / "build");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().kind == ErrorKind::Source);
}

TEST_CASE(
    "context: a build's private directories go where its own context says, whatever another "
    "build in the same process was told",
    "[context]") {
    test::DriverFixture first, second;
    first.tool_env = {{"TMPDIR", (first.tmp / "t1").string()}};
    second.tool_env = {{"TMPDIR", (second.tmp / "t2").string()},
                       {"XDG_RUNTIME_DIR", (second.tmp / "run").string()}};
    BuildContext c1 = first.context(), c2 = second.context();
    const BuildInputs in1 = prepare_build(first.o, c1);
    const BuildInputs in2 = prepare_build(second.o, c2);
    // The second build's places are its own, and the first keeps its own.
    CHECK(in1.private_places.tmpdir == (first.tmp / "t1").string());
    CHECK_FALSE(in1.private_places.xdg_runtime_dir);
    CHECK(in1.private_places.fallback ==
          first.tmp / "cache" / CacheLayout::private_builds(::getuid()));
    CHECK(in2.private_places.tmpdir == (second.tmp / "t2").string());
    CHECK(in2.private_places.xdg_runtime_dir == (second.tmp / "run").string());
    CHECK(in2.private_places.fallback ==
          second.tmp / "cache" / CacheLayout::private_builds(::getuid()));
}
