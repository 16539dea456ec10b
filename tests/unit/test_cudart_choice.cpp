// Which CUDA runtime a build links (prep/cudart_choice): where the choice
// comes from, and what is refused. The runtime each choice links is checked
// by tests/unit/test_plan.cpp and tests/integration/test_cudart.py.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "prep/cudart_choice.hpp"

using namespace bekc;

namespace {

// nvcc's options from an environment of these variables.
NvccEnvFlags cudart_env(std::map<std::string, std::string> vars) {
    RawEnvLookup lookup = [vars](std::string_view name) -> std::optional<std::string> {
        auto it = vars.find(std::string(name));
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
    return nvcc_env_flags(read_compiler_env(lookup, true, "/"));
}

// The usage error take_cudart_option ends with; fails the test when none.
std::string cudart_refusal(CompileFlags f, bool cuda = true, NvccEnvFlags env = cudart_env({})) {
    auto taken = take_cudart_option(f, cuda, env);
    if (!taken) {
        CHECK(taken.error().kind == ErrorKind::Usage);
        return taken.error().message;
    }
    FAIL("no error");
    return {};
}

}  // namespace

TEST_CASE("cudart: --cudart, or nvcc's option in the nvcc or link flags, which leaves them",
          "[cudart]") {
    CompileFlags f;
    f.cudart = "static";
    REQUIRE(take_cudart_option(f, true, cudart_env({})));
    CHECK(f.cudart == "static");

    CompileFlags g;
    g.cuda_flags = {"-lineinfo", "-cudart", "static", "--cudart=static"};
    g.ldflags = {"-cudart=static", "-lm"};
    REQUIRE(take_cudart_option(g, true, cudart_env({})));
    CHECK(g.cudart == "static");
    CHECK(g.cuda_flags == std::vector<std::string>{"-lineinfo"});
    CHECK(g.ldflags == std::vector<std::string>{"-lm"});

    CompileFlags none;
    REQUIRE(take_cudart_option(none, true, cudart_env({})));
    CHECK(none.cudart.empty());  // the default, decided by resolve_cudart
}

TEST_CASE(
    "cudart: $NVCC_PREPEND_FLAGS and $NVCC_APPEND_FLAGS, which nvcc reads around "
    "bekc's arguments, choose too",
    "[cudart]") {
    CompileFlags f;
    REQUIRE(take_cudart_option(
        f, true, cudart_env({{"NVCC_APPEND_FLAGS", " -lineinfo  -cudart\tstatic "}})));
    CHECK(f.cudart == "static");
    f.cudart = "shared";
    CHECK(cudart_refusal(f, true, cudart_env({{"NVCC_APPEND_FLAGS", "--cudart=static"}})) ==
          "--cudart=shared and $NVCC_APPEND_FLAGS' --cudart=static choose different CUDA "
          "runtimes; give one");
    CHECK(cudart_refusal(f, true, cudart_env({{"NVCC_PREPEND_FLAGS", "-cudart static"}})) ==
          "--cudart=shared and $NVCC_PREPEND_FLAGS' -cudart static choose different CUDA "
          "runtimes; give one");
    CompileFlags g;
    REQUIRE(take_cudart_option(g, true, cudart_env({{"NVCC_PREPEND_FLAGS", "-cudart=static"}})));
    CHECK(g.cudart == "static");
}

TEST_CASE("cudart: a missing, unknown or contradicting value names where it came from",
          "[cudart]") {
    CompileFlags last;
    last.cuda_flags = {"-O2", "-cudart"};
    CHECK(cudart_refusal(last) ==
          "--cuda-flag=-cudart needs a value: shared or static (the CUDA runtime the library "
          "links)");
    CompileFlags odd;
    odd.ldflags = {"--cudart=Static"};
    CHECK(cudart_refusal(odd) ==
          "--ldflag=--cudart=Static: the CUDA runtime is shared or static (docs/cli.md, "
          "\"--cudart\")");
    CompileFlags empty;
    empty.cuda_flags = {"--cudart="};
    CHECK_THAT(cudart_refusal(empty),
               Catch::StartsWith("--cuda-flag=--cudart=: the CUDA runtime is"));
    CompileFlags none;
    none.cudart = "none";  // nvcc's, but a library without a runtime never loads
    CHECK_THAT(cudart_refusal(none), Catch::StartsWith("--cudart=none: the CUDA runtime is"));
    CompileFlags both;
    both.cudart = "static";
    both.cuda_flags = {"-cudart", "shared"};
    CHECK(cudart_refusal(both) ==
          "--cudart=static and --cuda-flag=-cudart --cuda-flag=shared choose different CUDA "
          "runtimes; give one");
}

TEST_CASE("cudart: a C++-only build checks --cudart and links no runtime", "[cudart]") {
    CompileFlags f;
    f.cudart = "shared";
    f.cxx_flags = {"-cudart=nonsense"};  // not nvcc's flags: not read
    REQUIRE(take_cudart_option(f, false, cudart_env({})));
    CHECK(f.cudart.empty());
    CompileFlags bad;
    bad.cudart = "dynamic";
    CHECK_THAT(cudart_refusal(bad, false),
               Catch::StartsWith("--cudart=dynamic: the CUDA runtime is"));
}
