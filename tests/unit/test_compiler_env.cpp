// The compilers' environment in the cache key (lib/toolchain/compiler_env,
// lib/graph/keys): which variables are read, how their path lists resolve,
// and that each one changes the direct key.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/plan.hpp"
#include "toolchain/compiler_env.hpp"

using namespace bekc;

namespace {

RawEnvLookup fake_env(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
        auto it = vars.find(std::string(name));
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

std::vector<std::string> variable_names(const CompilerEnv& env) {
    std::vector<std::string> out;
    for (const auto& [name, value] : env.values) out.push_back(name);
    return out;
}

using Paths = std::vector<fs::path>;

// A direct key over fixed inputs, with `env` as the environment.
std::string direct_key(const CompilerEnv& env) {
    BuildInputs in;
    in.name = "k";
    in.target_prefix = "k";
    in.cxx = Tool{"/usr/bin/g++", "/usr/bin/g++", 1, 2};
    in.env = env;
    return plan(in, BuildOptions()).value().direct_key;
}

}  // namespace

TEST_CASE("compiler env: split_search_path reads colon lists as GCC does", "[env]") {
    const fs::path cwd = "/work";
    CHECK(split_search_path("", cwd).empty());
    CHECK(split_search_path("/a", cwd) == Paths{"/a"});
    CHECK(split_search_path("/a:/b/", cwd) == Paths{"/a", "/b/"});
    // Empty elements anywhere are the working directory; relative ones resolve.
    CHECK(split_search_path(":/a", cwd) == Paths{"/work", "/a"});
    CHECK(split_search_path("/a:", cwd) == Paths{"/a", "/work"});
    CHECK(split_search_path("/a::/b", cwd) == Paths{"/a", "/work", "/b"});
    CHECK(split_search_path("inc:../x", cwd) == Paths{"/work/inc", "/x"});
}

TEST_CASE("compiler env: only set variables, in the table's order; empty counts as set", "[env]") {
    auto env = read_compiler_env(
        fake_env({{"SOURCE_DATE_EPOCH", "1"}, {"CPATH", ""}, {"HOME", "/root"}}), false, "/w");
    CHECK(variable_names(env) == std::vector<std::string>{"CPATH", "SOURCE_DATE_EPOCH"});
    CHECK(env.values[0].second.empty());
    CHECK(env.include_dirs.empty());  // CPATH="" names no directory
}

TEST_CASE("compiler env: nvcc's variables only for builds that run nvcc", "[env]") {
    auto vars = fake_env({{"NVCC_APPEND_FLAGS", "-DX=1"}, {"INCLUDES", "-I/x"}, {"CPATH", "/c"}});
    CHECK(variable_names(read_compiler_env(vars, false, "/w")) ==
          std::vector<std::string>{"CPATH"});
    CHECK(variable_names(read_compiler_env(vars, true, "/w")) ==
          std::vector<std::string>{"CPATH", "NVCC_APPEND_FLAGS", "INCLUDES"});
}

TEST_CASE("compiler env: nvcc's options from the environment go around its command line", "[env]") {
    auto env = read_compiler_env(
        fake_env({{"NVCC_APPEND_FLAGS", " -rdc=true\t-lineinfo "}, {"NVCC_PREPEND_FLAGS", "-G"}}),
        true, "/w");
    CHECK(nvcc_env_flags(env).around({"-O3"}) ==
          std::vector<std::string>{"-G", "-O3", "-rdc=true", "-lineinfo"});
    // A build that runs no nvcc reads none.
    CHECK(nvcc_env_flags(read_compiler_env(fake_env({{"NVCC_APPEND_FLAGS", "-G"}}), false, "/w"))
              .around({})
              .empty());
}

TEST_CASE("compiler env: nvcc's link runs without the variables' compile-only options", "[env]") {
    using Env = std::vector<std::pair<std::string, std::string>>;
    auto env = read_compiler_env(
        fake_env({{"NVCC_PREPEND_FLAGS", "-dc -lineinfo --device-c"}, {"NVCC_APPEND_FLAGS", "-G"}}),
        true, "/w");
    CHECK(nvcc_link_env(env) == Env{{"NVCC_PREPEND_FLAGS", "-lineinfo"}});
    CHECK(nvcc_link_env(read_compiler_env(fake_env({{"NVCC_APPEND_FLAGS", "-c"}}), true, "/w")) ==
          Env{{"NVCC_APPEND_FLAGS", ""}});
    CHECK(check_nvcc_env_phases(nvcc_env_flags(env)).has_value());
}

TEST_CASE("compiler env: another phase in nvcc's variables is a usage error", "[env]") {
    auto env = read_compiler_env(fake_env({{"NVCC_APPEND_FLAGS", "-O3 -ptx"}}), true, "/w");
    auto checked = check_nvcc_env_phases(nvcc_env_flags(env));
    REQUIRE_FALSE(checked.has_value());
    CHECK(checked.error().kind == ErrorKind::Usage);
    CHECK(checked.error().message.starts_with("$NVCC_APPEND_FLAGS has '-ptx'"));
}

TEST_CASE("compiler env: the path variables become search directories", "[env]") {
    auto env = read_compiler_env(fake_env({{"CPATH", "/c1:c2"},
                                           {"CPLUS_INCLUDE_PATH", "/s"},
                                           {"C_INCLUDE_PATH", "/not/for/cxx"},
                                           {"LIBRARY_PATH", "/l:"}}),
                                 false, "/w");
    CHECK(env.include_dirs == Paths{"/c1", "/w/c2"});
    CHECK(env.system_include_dirs == Paths{"/s"});
    CHECK(env.library_dirs == Paths{"/l", "/w"});
    CHECK(variable_names(env) ==
          std::vector<std::string>{"CPATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH"});
}

TEST_CASE("compiler env: the keyed and the documented-unkeyed lists do not overlap", "[env]") {
    std::set<std::string_view> keyed;
    for (const auto& v : kCompilerEnv) CHECK(keyed.insert(v.name).second);  // no duplicates
    for (const auto& v : kNotKeyedEnv) CHECK(keyed.count(v.name) == 0);
    for (const auto& name :
         {"CPATH", "CPLUS_INCLUDE_PATH", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN",
          "SOURCE_DATE_EPOCH", "LIBRARY_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH", "LD_RUN_PATH"})
        CHECK(keyed.count(name) == 1);
}

TEST_CASE("compiler env: every keyed variable changes the direct key", "[env][key]") {
    const std::string none = direct_key(read_compiler_env(fake_env({}), true, "/w"));
    std::set<std::string> keys{none};
    for (const auto& v : kCompilerEnv) {
        auto with = [&](const std::string& value) {
            return direct_key(
                read_compiler_env(fake_env({{std::string(v.name), value}}), true, "/w"));
        };
        std::string a = with("1"), b = with("2"), empty = with("");
        INFO(v.name);
        CHECK(a != b);
        CHECK(a != none);
        CHECK(empty != none);  // set-but-empty differs from unset
        CHECK(keys.insert(a).second);
    }
}

TEST_CASE("compiler env: a relative CPATH keys the directory it means here", "[env][key]") {
    auto vars = fake_env({{"CPATH", "inc"}});
    CHECK(direct_key(read_compiler_env(vars, false, "/one")) !=
          direct_key(read_compiler_env(vars, false, "/two")));
    CHECK(direct_key(read_compiler_env(vars, false, "/one")) ==
          direct_key(read_compiler_env(vars, false, "/one")));
}
