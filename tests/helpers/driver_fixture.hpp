// Test helper: `bekc build` (lib/driver) driven in-process with a fake
// runner (fake_runner.hpp), fake tools and a private environment, in a
// temporary directory with its own cache. No compiler is needed.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "driver/build.hpp"
#include "fake_runner.hpp"
#include "graph/keys.hpp"
#include "temp_dir.hpp"

namespace bekc::test {

struct DriverFixture {
    TempDir tmp;
    FakeRunner runner;
    std::map<std::string, std::string> env;       // bekc's ($BEKC_*)
    std::map<std::string, std::string> tool_env;  // what the compilers see (CPATH, ...)
    BuildOptions o;

    DriverFixture() {
        write_file(tmp / "bin/g++", "fake host compiler");
        write_file(tmp / "bin/clang++", "another fake host compiler");
        write_file(tmp / "bin/nvcc", "fake nvcc");
        write_file(tmp / "bin/nvcc-other", "another fake nvcc");
        write_file(tmp / "src/a.cu",
                   "#include \"brainevent/common.h\"\n"
                   "// @BE scale arg ret stream\n"
                   "void scale(const BE::Tensor x, BE::Tensor y, int64_t stream) {}\n");
        write_file(tmp / "src/b.cpp",
                   "#include \"brainevent/common.h\"\n"
                   "// @BE shift\n"
                   "void shift(const BE::Tensor x, BE::Tensor y) {}\n"
                   "void extra(const BE::Tensor x, BE::Tensor y) {}\n");
        write_file(tmp / "xla/xla/ffi/api/ffi.h", "// fake\n");
        o.inputs = {(tmp / "src/a.cu").string(), (tmp / "src/b.cpp").string()};
        o.name = "m";
        o.arch = "sm_90";
        o.cxx = (tmp / "bin/g++").string();
        o.nvcc = (tmp / "bin/nvcc").string();
        o.cache_dir = (tmp / "cache").string();
        o.quiet = true;
    }

    // The programs the context's PATH holds (none by default); the fake
    // runner answers them (fake_runner.hpp).
    std::set<std::string> on_path;

    BuildContext context() {
        BuildContext c{runner};
        auto lookup = [](const std::map<std::string, std::string>& m) {
            return [&m](std::string_view name) -> std::optional<std::string> {
                auto it = m.find(std::string(name));
                if (it == m.end()) return std::nullopt;
                return it->second;
            };
        };
        c.env = lookup(env);
        c.raw_env = lookup(tool_env);
        c.tools = ToolLookup{c.env,
                             [this](const std::string& name) -> std::optional<fs::path> {
                                 if (!on_path.count(name)) return std::nullopt;
                                 return tmp / "bin" / name;
                             },
                             [](const fs::path&) { return true; }};
        c.cwd = tmp.path();
        return c;
    }

    BuildResult build() {
        BuildContext c = context();
        return run_build(o, c);
    }

    std::string key() {
        BuildContext c = context();
        return plan_build(prepare_build(o, c), o).direct_key;
    }
};

}  // namespace bekc::test
