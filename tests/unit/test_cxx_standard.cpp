// The C++ standard a build asks for (plan/cxx_standard, driver/
// cxx_standard_check): every spelling and every place a compiler reads one,
// and the usage error for one older than C++17, which names where it came
// from. tests/integration/test_build_errors.py runs the binary with them.
#include <catch2/catch.hpp>

#include <map>

#include "../helpers/fatal.hpp"
#include "plan/cxx_standard.hpp"
#include "prep/cxx_standard_check.hpp"

using namespace bekc;

namespace {

using Strings = std::vector<std::string>;

// The standards `flags` asks for, each as "value <- flags as spelled [file]".
Strings requests(const Strings& flags, const std::map<std::string, Strings>& files = {}) {
    ResponseFileWords words = [&files](std::string_view name) -> const Strings* {
        auto it = files.find(std::string(name));
        return it == files.end() ? nullptr : &it->second;
    };
    Strings out;
    for (const auto& r : standard_requests(flags, words)) {
        std::string shown = r.value + " <-";
        for (const auto& f : r.spelled) shown += " " + f;
        if (!r.file.empty()) shown += " [" + r.file + "]";
        out.push_back(shown);
    }
    return out;
}

// The message check_cxx_standards fails with (exit 2), or "<no error>".
std::string refusal(const CompileFlags& flags, const NvccEnvFlags& env = {},
                    const ResponseFileWords& files = {}) {
    return test::fatal_message([&] { return check_cxx_standards(flags, env, files); });
}

}  // namespace

TEST_CASE("cxx standard: every spelling of GCC, clang and nvcc, by year", "[std]") {
    CHECK(cxx_standard_year("c++98") == 1998);
    CHECK(cxx_standard_year("gnu++03") == 2003);
    CHECK(cxx_standard_year("c++0x") == 2011);
    CHECK(cxx_standard_year("c++11") == 2011);
    CHECK(cxx_standard_year("c++1y") == 2014);
    CHECK(cxx_standard_year("gnu++14") == 2014);
    CHECK(cxx_standard_year("c++1z") == 2017);
    CHECK(cxx_standard_year("c++17") == 2017);
    CHECK(cxx_standard_year("gnu++2a") == 2020);
    CHECK(cxx_standard_year("c++23") == 2023);
    CHECK(cxx_standard_year("c++2c") == 2026);
    for (const char* name : {"c11", "gnu17", "c++", "c++4", "foo", "", "C++17", "c++17 "})
        CHECK_FALSE(cxx_standard_year(name));
    CHECK(cxx_standard_title(2014) == "C++14");
    CHECK(cxx_standard_title(2003) == "C++03");
}

TEST_CASE("cxx standard: where a list of flags asks for one", "[std]") {
    CHECK(requests({"-O2", "-std=c++14", "--std=gnu++11", "-std", "c++1y", "--std", "c++20"}) ==
          Strings{"c++14 <- -std=c++14", "gnu++11 <- --std=gnu++11", "c++1y <- -std c++1y",
                  "c++20 <- --std c++20"});
    CHECK(requests({"-ansi"}) == Strings{"c++98 <- -ansi"});
    // What nvcc hands the host compiler: split at commas and white space.
    CHECK(requests({"-Xcompiler", "-std=c++14", "-Xcompiler=-fPIC,-std=gnu++11",
                    "--compiler-options", "-O2 -std=c++03", "--compiler-options=-Wall"}) ==
          Strings{"c++14 <- -Xcompiler -std=c++14", "gnu++11 <- -Xcompiler=-fPIC,-std=gnu++11",
                  "c++03 <- --compiler-options -O2 -std=c++03"});
    // Response files, nested, and nvcc's options files; a file not read asks
    // for nothing.
    CHECK(requests({"@a.rsp", "-optf", "n.opt", "--options-file=unread.opt"},
                   {{"a.rsp", {"-O2", "@b.rsp"}},
                    {"b.rsp", {"-std=c++11"}},
                    {"n.opt", {"-Xcompiler", "-std=c++14"}}}) ==
          Strings{"c++11 <- @a.rsp [b.rsp]", "c++14 <- -optf n.opt [n.opt]"});
    // No value, or a value that is a file name: nothing asked.
    CHECK(requests({"-std"}).empty());
    CHECK(requests({"-std=", "-o", "x.std", "-Dstd=1", "-stdlib=libc++"}).empty());
}

TEST_CASE("cxx standard: --std must name C++17 or later", "[std]") {
    CompileFlags f;
    CHECK(refusal(f) == "<no error>");  // c++17, the default
    for (const char* ok : {"c++20", "gnu++17", "c++1z", "c++2b"}) {
        f.cxx_std = ok;
        CHECK(refusal(f) == "<no error>");
    }
    f.cxx_std = "c++14";
    CHECK(refusal(f) ==
          "bekc: error: --std c++14 asks for C++14, but bekc's runtime headers need C++17 or "
          "later: use --std c++17 (the default) or a later standard");
    f.cxx_std = "gnu++1y";
    CHECK(refusal(f) ==
          "bekc: error: --std gnu++1y asks for C++14, but bekc's runtime headers need C++17 or "
          "later: use --std c++17 (the default) or a later standard");
    f.cxx_std = "c11";
    CHECK(refusal(f) ==
          "bekc: error: --std c11 names no C++ standard: use c++17 (the default), c++20 or "
          "another of c++17 and later");
}

TEST_CASE("cxx standard: an older one in the compilers' flags names the flag as given", "[std]") {
    const std::string rest =
        " but bekc's runtime headers need C++17 or later: remove it, or ask for c++17 or later "
        "(bekc compiles with --std, c++17 by default)";
    CompileFlags f;
    f.cxx_flags = {"-std=c++14"};
    CHECK(refusal(f) ==
          "bekc: error: --cxx-flag=-std=c++14 (extra_cflags from Python) asks for C++14," + rest);

    CompileFlags g;
    g.cuda_flags = {"-lineinfo", "-Xcompiler", "-std=gnu++11"};
    CHECK(refusal(g) ==
          "bekc: error: --cuda-flag=-Xcompiler --cuda-flag=-std=gnu++11 (extra_cuda_cflags from "
          "Python) asks for C++11," +
              rest);

    NvccEnvFlags env;
    env.prepend = {"-std", "c++11"};
    CHECK(refusal(CompileFlags{}, env) ==
          "bekc: error: -std c++11 in $NVCC_PREPEND_FLAGS asks for C++11," + rest);

    CompileFlags h;
    h.cxx_flags = {"@flags.rsp"};
    Strings words = {"-O2", "-std=c++14"};
    auto files = [&](std::string_view name) -> const Strings* {
        return name == "flags.rsp" ? &words : nullptr;
    };
    CHECK(refusal(h, {}, files) ==
          "bekc: error: --cxx-flag=@flags.rsp (extra_cflags from Python), through the response "
          "file flags.rsp, asks for C++14," +
              rest);

    // Newer standards, and names that are no C++ standard (the compiler's to
    // judge), pass.
    CompileFlags newer;
    newer.cxx_flags = {"-std=c++20", "-std=c11"};
    newer.cuda_flags = {"--std", "c++17"};
    CHECK(refusal(newer) == "<no error>");
}
