// `bekc build` end to end (lib/driver) with a fake runner: no compiler runs,
// every step of the build graph is seen as the driver hands it over.
#include <catch2/catch.hpp>

#include <algorithm>

#include "../helpers/driver_fixture.hpp"
#include "diag/compile_log.hpp"
#include "package/package_build.hpp"
#include "run/parallel.hpp"
#include "store/cache.hpp"
#include "store/compile_times.hpp"
#include "util/error.hpp"

using namespace bekc;
using test::DriverFixture;

namespace {

size_t first_containing(const std::vector<std::string>& v, const std::string& part) {
    for (size_t i = 0; i < v.size(); ++i)
        if (v[i].find(part) != std::string::npos) return i;
    return v.size();
}

// The FatalError the build ends with; the test fails when it succeeds.
FatalError build_error(DriverFixture& f) {
    try {
        f.build();
    } catch (const FatalError& e) {
        return e;
    }
    FAIL("the build succeeded");
    return FatalError(Error{});
}

}  // namespace

TEST_CASE("driver: a miss runs every step, the next build is a hit that runs none", "[driver]") {
    DriverFixture f;
    BuildResult first = f.build();
    CHECK_FALSE(first.cache_hit);
    CHECK(f.runner.ran("handler_rt.cpp"));
    CHECK(f.runner.ran("nvcc"));
    CHECK(f.runner.ran("link libm.so"));
    REQUIRE(fs::exists(first.manifest));
    CHECK(read_file(first.library).value() == "fake output of link libm.so\n");
    CHECK(first.targets == std::vector<std::string>{"m.scale", "m.shift"});
    CHECK(f.runner.written.size() == 3);  // the two wrappers, the entry points
    CHECK(f.runner.ran("c++ bekc_handlers.cpp"));

    f.runner = test::FakeRunner();
    BuildResult second = f.build();
    CHECK(second.cache_hit);
    CHECK(second.manifest == first.manifest);
    CHECK(f.runner.batches.empty());
    CHECK(f.runner.written.empty());
    CHECK(f.runner.probes == 0);  // tool versions are remembered
}

TEST_CASE("driver: the runner gets every step at once, the link after the compiles", "[driver]") {
    DriverFixture f;
    f.o.jobs = 3;
    f.build();
    REQUIRE(f.runner.batches.size() == 1);
    const auto& all = f.runner.batches[0];
    CHECK(all.jobs == 3);
    REQUIRE(all.descriptions.size() == 5);  // bekc_rt.o, both inputs, the entry points, the link
    CHECK(first_containing(all.descriptions, "handler_rt.cpp") < 4);
    CHECK(first_containing(all.descriptions, "a.cu") < 4);
    CHECK(first_containing(all.descriptions, "b.cpp") < 4);
    CHECK(first_containing(all.descriptions, "bekc_handlers.cpp") < 4);
    CHECK(all.descriptions.back() == "link libm.so");
}

TEST_CASE("driver: -j reaches the runner", "[driver]") {
    DriverFixture f;
    f.o.jobs = 1;
    f.build();
    for (const auto& b : f.runner.batches) CHECK(b.jobs == 1);
}

TEST_CASE("driver: a failing step stops the build before the link and caches nothing", "[driver]") {
    DriverFixture f;
    f.runner.fail_when = "b.cpp";
    FatalError e = build_error(f);
    CHECK(e.exit_code() == kExitSourceError);
    CHECK(std::string(e.what()).find("compilation failed") != std::string::npos);
    CHECK_FALSE(f.runner.ran("link"));
    auto entries = Cache(f.tmp / "cache").list();
    REQUIRE(entries);
    CHECK(entries->empty());
}

TEST_CASE("driver: bekc_rt.o is compiled when the cache lacks it, and only then", "[driver]") {
    DriverFixture f;
    f.build();
    CHECK(f.runner.ran("handler_rt.cpp"));

    // Another build with the same host compiler: the object is in the cache.
    f.runner = test::FakeRunner();
    f.o.flags.opt_level = 1;
    CHECK_FALSE(f.build().cache_hit);
    CHECK_FALSE(f.runner.ran("handler_rt.cpp"));

    // Another standard: another object.
    f.runner = test::FakeRunner();
    f.o.flags.cxx_std = "c++20";
    f.build();
    CHECK(f.runner.ran("handler_rt.cpp"));
}

TEST_CASE("driver: a failing runtime-object compile names it, and is a compile error", "[driver]") {
    // The compiler ran and reported errors: exit 1, as for any compile. Exit
    // 3 says that a compiler is missing or cannot run.
    DriverFixture f;
    f.runner.fail_when = "handler_rt.cpp";
    FatalError e = build_error(f);
    CHECK(e.exit_code() == kExitSourceError);
    const std::string what = e.what();
    CHECK(what.starts_with("bekc: error: compiling bekc's handler support code with "));
    CHECK(what.ends_with(
        "g++ failed (exited with code 1)\n"
        "note: bekc compiles it with the host compiler, --std and the compiler's environment "
        "($CPATH, $CPLUS_INCLUDE_PATH, $GCC_EXEC_PREFIX, ...): the errors above come from one of "
        "these"));
}

TEST_CASE("driver: a standard older than C++17 stops the build before anything runs",
          "[driver][std]") {
    DriverFixture f;
    f.o.flags.cxx_std = "c++14";
    FatalError e = build_error(f);
    CHECK(e.exit_code() == kExitUsage);
    CHECK(std::string(e.what()) ==
          "bekc: error: --std c++14 asks for C++14, but bekc's runtime headers need C++17 or "
          "later: use --std c++17 (the default) or a later standard");
    CHECK(f.runner.batches.empty());

    DriverFixture g;
    g.tool_env["NVCC_APPEND_FLAGS"] = "-lineinfo -std=c++11";
    CHECK(std::string(build_error(g).what()) ==
          "bekc: error: -std=c++11 in $NVCC_APPEND_FLAGS asks for C++11, but bekc's runtime "
          "headers need C++17 or later: remove it, or ask for c++17 or later (bekc compiles with "
          "--std, c++17 by default)");
    CHECK(g.runner.batches.empty());
}

TEST_CASE("driver: undefined symbols of a library name it and how to link it", "[driver][link]") {
    DriverFixture f;
    f.runner.fail_when = "link libm.so";
    f.runner.fail_output =
        "/usr/bin/ld: /tmp/bekc-0/build.x/0_a.bekc.cu.o: in function `scale(BE::Tensor, "
        "BE::Tensor, long)':\n"
        "tmpxft_1-6_0_a.cudafe1.cpp:(.text+0x2e): undefined reference to `cublasCreate_v2'\n"
        "/usr/bin/ld: tmpxft_1-6_0_a.cudafe1.cpp:(.text+0x4a): undefined reference to "
        "`cublasSetStream_v2'\n"
        "/usr/bin/ld: tmpxft_1-6_0_a.cudafe1.cpp:(.text+0x6b): undefined reference to "
        "`cublasSgemm_v2'\n"
        "/usr/bin/ld: tmpxft_1-6_0_a.cudafe1.cpp:(.text+0x7a): undefined reference to "
        "`cublasDestroy_v2'\n"
        "/usr/bin/ld: tmpxft_1-6_0_a.cudafe1.cpp:(.text+0x8a): undefined reference to "
        "`cublasSgemm_v2'\n"
        "/usr/bin/ld: tmpxft_1-6_0_a.cudafe1.cpp:(.text+0x9a): undefined reference to "
        "`omp_get_max_threads'\n"
        "/usr/bin/ld: tmpxft_1-6_0_a.cudafe1.cpp:(.text+0xaa): undefined reference to "
        "`_Z6helperf'\n"
        "collect2: error: ld returned 1 exit status\n";
    FatalError e = build_error(f);
    CHECK(e.exit_code() == kExitSourceError);
    // nvcc links this module (a.cu): OpenMP's library by name, no -L.
    CHECK(std::string(e.what()) ==
          "bekc: error: linking libm.so failed: undefined symbols cublasCreate_v2, "
          "cublasSetStream_v2, cublasSgemm_v2 and 1 more (cuBLAS); omp_get_max_threads "
          "(OpenMP); helper(float) (defined in no source of the module)\n"
          "note: link cuBLAS with --ldflag=-lcublas (extra_ldflags=[\"-lcublas\"] from Python)\n"
          "note: link OpenMP with --ldflag=-lgomp (extra_ldflags=[\"-lgomp\"] from Python)\n"
          "note: define helper(float) in a source of the module, or link the library that "
          "defines it with --ldflag=-lNAME (extra_ldflags=[\"-lNAME\"] from Python)\n"
          "note: rerun with -v to see the linker's own output");
    auto entries = Cache(f.tmp / "cache").list();
    REQUIRE(entries);
    CHECK(entries->empty());
}

TEST_CASE("driver: a C++ module's link names the host compiler's flags and the toolkit's -L",
          "[driver][link]") {
    DriverFixture f;
    f.o.inputs = {(f.tmp / "src/b.cpp").string()};
    f.runner.fail_when = "link libm.so";
    f.runner.fail_output =
        "ld.lld: error: undefined symbol: omp_get_num_threads\n"
        ">>> referenced by b.cpp\n"
        ">>>               /tmp/bekc-0/build.x/0_b.bekc.cpp.o:(shift(BE::Tensor, BE::Tensor))\n"
        "ld.lld: error: undefined symbol: cuInit\n"
        ">>> referenced by b.cpp\n"
        "ld.lld: error: undefined symbol: cusparseCreate\n"
        ">>> referenced by b.cpp\n"
        "clang: error: linker command failed with exit code 1 (use -v to see invocation)\n";
    f.o.verbose = true;  // the linker's output is shown: no note says -v
    CHECK(std::string(build_error(f).what()) ==
          "bekc: error: linking libm.so failed: undefined symbols omp_get_num_threads (OpenMP); "
          "cuInit (the CUDA driver API); cusparseCreate (cuSPARSE)\n"
          "note: link OpenMP with --ldflag=-fopenmp (extra_ldflags=[\"-fopenmp\"] from "
          "Python)\n"
          "note: link the CUDA driver API with --ldflag=-lcuda (extra_ldflags=[\"-lcuda\"] from "
          "Python); libcuda.so comes with the NVIDIA driver; where none is installed, the "
          "toolkit's lib64/stubs holds one to link against, which nvcc searches\n"
          "note: link cuSPARSE with --ldflag=-lcusparse (extra_ldflags=[\"-lcusparse\"] from "
          "Python), and name the CUDA toolkit's library directory with "
          "--ldflag=-L<toolkit>/lib64");
}

TEST_CASE("driver: one input compiles beside its entry points and bekc_rt.o, then links",
          "[driver]") {
    DriverFixture f;
    f.o.inputs = {(f.tmp / "src/b.cpp").string()};
    f.build();
    REQUIRE(f.runner.batches.size() == 1);
    auto all = f.runner.batches[0].descriptions;
    REQUIRE(all.size() == 4);
    CHECK(all.back() == "link libm.so");
    all.pop_back();
    std::sort(all.begin(), all.end());
    CHECK(all == std::vector<std::string>{"c++ " + (f.tmp / "src/b.cpp").string(),
                                          "c++ bekc/handler_rt.cpp", "c++ bekc_handlers.cpp"});
}

TEST_CASE("driver: a dry run hands the runner nothing and writes nothing", "[driver]") {
    DriverFixture f;
    f.o.dry_run = true;
    f.build();
    CHECK(f.runner.batches.empty());
    CHECK(f.runner.written.empty());
    CHECK_FALSE(fs::exists(f.tmp / "cache/entries"));
    CHECK_FALSE(fs::exists(f.tmp / "cache/runtime"));
}

TEST_CASE("driver: --force runs every compile again under the same key", "[driver]") {
    DriverFixture f;
    BuildResult first = f.build();
    f.runner = test::FakeRunner();
    f.o.force = true;
    BuildResult again = f.build();
    CHECK_FALSE(again.cache_hit);
    CHECK(f.runner.ran("nvcc"));
    CHECK(again.manifest == first.manifest);
}

TEST_CASE("driver: an unreachable remote cache costs a warning, not the build", "[driver]") {
    DriverFixture f;
    // A port nothing listens on; the lookup fails, the build goes on, and
    // the upload afterwards fails the same way.
    f.o.remote_cache = "http://127.0.0.1:9/bekc";
    f.env["BEKC_REMOTE_TIMEOUT"] = "2";
    f.on_path = {"curl"};
    BuildResult r = f.build();
    CHECK_FALSE(r.cache_hit);
    CHECK_FALSE(r.remote_hit);
    CHECK(fs::exists(r.manifest));
    // curl is found and run through the build's context.
    CHECK(f.runner.curl_runs >= 1);
    f.runner = test::FakeRunner();
    CHECK(f.build().cache_hit);  // local first: the remote is not asked again
}

TEST_CASE("driver: the compiles that took longest last time start first", "[driver]") {
    DriverFixture f;
    test::write_file(f.tmp / "src/c.cpp",
                     "#include \"brainevent/common.h\"\n"
                     "// @BE third\n"
                     "void third(const BE::Tensor x, BE::Tensor y) {}\n");
    f.o.inputs.push_back((f.tmp / "src/c.cpp").string());
    f.runner.seconds = {{"a.cu", 1.0}, {"b.cpp", 3.0}, {"c.cpp", 2.0}};
    f.build();  // never timed before: graph order
    auto first = f.runner.batches.front().descriptions;
    CHECK(first_containing(first, "a.cu") < first_containing(first, "b.cpp"));

    f.runner = test::FakeRunner();
    f.o.force = true;
    f.build();
    auto again = f.runner.batches.front().descriptions;
    CHECK(first_containing(again, "b.cpp") < first_containing(again, "c.cpp"));
    CHECK(first_containing(again, "c.cpp") < first_containing(again, "a.cu"));
}

TEST_CASE("driver: nvcc gets the slots the wave leaves it", "[driver]") {
    DriverFixture f;
    f.o.inputs = {(f.tmp / "src/a.cu").string()};
    f.o.arch = "sm_80,sm_90,sm_100";
    f.o.jobs = 16;
    f.build();
    f.runner = test::FakeRunner();
    f.o.force = true;
    f.build();
    REQUIRE(f.runner.batches.size() == 1);  // the compiles and the link after them
    CHECK(f.runner.batches[0].jobs == 16);
    // The key does not change with the threads (test_key_property.cpp: -j).
}

TEST_CASE("longest_first: unknown first, then by decreasing time, ties in order",
          "[driver][times]") {
    std::vector<std::optional<double>> s = {2.0, std::nullopt, 5.0, 2.0, std::nullopt};
    auto order = longest_first(s.size(), [&](size_t i) { return s[i]; });
    CHECK(order == std::vector<size_t>{1, 4, 2, 0, 3});
}

TEST_CASE("longest_first: those never timed by their guessed size, the biggest first",
          "[driver][times]") {
    // A package's first build has no times: its modules start biggest first,
    // so that the longest is less likely to start last.
    std::vector<std::optional<double>> s = {std::nullopt, 3.0, std::nullopt, std::nullopt};
    std::vector<double> size = {10, 0, 300, 20};
    auto order = longest_first(
        s.size(), [&](size_t i) { return s[i]; }, [&](size_t i) { return size[i]; });
    CHECK(order == std::vector<size_t>{2, 3, 0, 1});
}

TEST_CASE("compile times are kept per input, bounded, and survive a damaged memo",
          "[driver][times]") {
    test::TempDir tmp;
    fs::path root = tmp / "cache";
    {
        CompileTimes t(root);
        CHECK_FALSE(t.seconds("/a.cu"));
        for (size_t i = 0; i < CompileTimes::kMaxEntries + 10; ++i)
            t.record("/f" + std::to_string(i), static_cast<double>(i));
        t.record("/a.cu", 4.5);
        t.save();
    }
    CompileTimes back(root);
    CHECK(back.seconds("/a.cu") == 4.5);
    CHECK_FALSE(back.seconds("/f0"));  // the oldest went
    CHECK(back.seconds("/f20"));
    test::write_file(root / "timings.json",
                     "{\"/a.cu\": \"not a time\", \"/b\": {\"s\": 1, \"n\": 1}}");
    CompileTimes damaged(root);
    CHECK_FALSE(damaged.seconds("/a.cu"));
    CHECK(damaged.seconds("/b") == 1.0);
}

TEST_CASE("link failures: bekc's objects and mangled names in the user's terms", "[driver][log]") {
    const std::string out =
        "nvlink error   : Undefined reference to '_Z5shiftf' in '/b/0_k.bekc.cu.o'\n"
        "ld: /b/1_m.bekc.cu.o: undefined reference to `_ZN2ns4stepEii'\n"
        "nvlink error   : Undefined reference to '_Z5shiftf' in '/b/0_k.bekc.cu.o'\n"
        "plain_c_symbol '_Znotmangled'\n";
    const std::string notes = link_failure_notes(out, {{"/b/0_k.bekc.cu.o", "src/k.cu"},
                                                       {"/b/1_m.bekc.cu.o", "m.cu"},
                                                       {"/b/2_unused.bekc.cu.o", "unused.cu"}});
    CHECK(notes ==
          "note: '/b/0_k.bekc.cu.o' is compiled from 'src/k.cu'\n"
          "note: '/b/1_m.bekc.cu.o' is compiled from 'm.cu'\n"
          "note: '_Z5shiftf' is shift(float)\n"
          "note: '_ZN2ns4stepEii' is ns::step(int, int)\n");
    CHECK(link_failure_notes("ld: cannot find -lfoo\n", {{"/b/0_k.bekc.cu.o", "k.cu"}}).empty());
}
