// What a hit by the portable key checks in place of the toolchain: whether a
// library runs on this machine (plan/target.hpp), and target.json, which
// carries what the library needs (store/target_file.hpp).
#include <catch2/catch.hpp>

#include "plan/target.hpp"
#include "store/target_file.hpp"

using namespace bekc;

namespace {

Arch sm(int n, std::string suffix = "") {
    return Arch{n, std::move(suffix)};
}

LibraryTarget cuda_library(std::vector<Arch> sass, std::vector<Arch> ptx,
                           std::string cuda = "13.0") {
    LibraryTarget t;
    t.machine = "x86_64";
    t.glibc = "2.36";
    t.cuda = std::move(cuda);
    t.cudart = "shared";
    t.sass = std::move(sass);
    t.ptx = std::move(ptx);
    return t;
}

MachineTarget machine(std::vector<Arch> gpus, int driver = 13000, std::string glibc = "2.39") {
    MachineTarget m;
    m.machine = "x86_64";
    m.glibc = std::move(glibc);
    m.gpus = std::move(gpus);
    m.driver_cuda = driver;
    return m;
}

}  // namespace

TEST_CASE("target: SASS runs on GPUs of its major version and a minor not below it", "[target]") {
    auto lib = cuda_library({sm(80), sm(90)}, {});
    CHECK(target_misfit(lib, machine({sm(86)}), {}, true).empty());
    CHECK(target_misfit(lib, machine({sm(90)}), {}, true).empty());
    // Blackwell: no SASS of major 10, and no PTX.
    std::string why = target_misfit(lib, machine({sm(100)}), {}, false);
    CHECK_THAT(why, Catch::Contains("none of which runs on sm_100"));
    // Every GPU of the machine must be served.
    CHECK_FALSE(target_misfit(lib, machine({sm(90), sm(120)}), {}, false).empty());
}

TEST_CASE("target: arch-specific SASS runs only on its own GPU", "[target]") {
    auto lib = cuda_library({sm(90, "a")}, {});
    CHECK(target_misfit(lib, machine({sm(90)}), {}, true).empty());
    auto lib100 = cuda_library({sm(100, "a")}, {});
    CHECK_FALSE(target_misfit(lib100, machine({sm(103)}), {}, false).empty());
}

TEST_CASE("target: PTX counts only when SASS is not asked for alone", "[target]") {
    auto lib = cuda_library({sm(80)}, {sm(90)});
    // sm_120: no SASS; PTX compute_90 is JIT-compiled by the driver.
    CHECK_FALSE(target_misfit(lib, machine({sm(120)}), {}, true).empty());
    CHECK(target_misfit(lib, machine({sm(120)}), {}, false).empty());
    // PTX of a newer version than the GPU does not run.
    CHECK_FALSE(
        target_misfit(cuda_library({sm(90)}, {sm(90)}), machine({sm(86)}), {}, false).empty());
}

TEST_CASE("target: the driver must support the library's CUDA release", "[target]") {
    auto lib = cuda_library({sm(90)}, {sm(90)}, "13.0");
    // A 12.8 driver cannot run CUDA 13 code, SASS or PTX.
    std::string why = target_misfit(lib, machine({sm(90)}, 12080), {}, false);
    CHECK_THAT(why, Catch::Contains("newer driver"));
    // SASS needs the major release only; PTX the exact one.
    auto lib132 = cuda_library({sm(90)}, {sm(90)}, "13.2");
    CHECK(target_misfit(lib132, machine({sm(90)}, 13000), {}, true).empty());
    CHECK_FALSE(target_misfit(lib132, machine({sm(120)}, 13000), {}, false).empty());
    CHECK(target_misfit(lib132, machine({sm(120)}, 13020), {}, false).empty());
    // An unknown driver version is not held against the library.
    CHECK(target_misfit(lib, machine({sm(90)}, 0), {}, true).empty());
}

TEST_CASE("target: an arch asked by name needs its own SASS", "[target]") {
    auto lib = cuda_library({sm(80), sm(90)}, {sm(90)});
    CHECK(target_misfit(lib, machine({}), {sm(90)}, true).empty());
    CHECK(target_misfit(lib, machine({}), {sm(80), sm(90)}, true).empty());
    CHECK_THAT(target_misfit(lib, machine({}), {sm(86)}, false),
               Catch::Contains("sm_86 was asked for"));
}

TEST_CASE("target: with no GPU, a CUDA library is served as a build would make one", "[target]") {
    // A build with no GPU compiles for sm_80 plus PTX.
    CHECK(target_misfit(cuda_library({sm(80)}, {sm(80)}), machine({}, 0), {}, true).empty());
    CHECK_FALSE(target_misfit(cuda_library({sm(90)}, {sm(90)}), machine({}, 0), {}, false).empty());
}

TEST_CASE("target: the processor must match and the C library be as new", "[target]") {
    LibraryTarget host;
    host.machine = "x86_64";
    host.glibc = "2.36";
    CHECK(target_misfit(host, machine({}, 0, "2.36"), {}, true).empty());
    CHECK(target_misfit(host, machine({}, 0, "2.39"), {}, true).empty());
    CHECK_THAT(target_misfit(host, machine({}, 0, "2.31"), {}, true),
               Catch::Contains("glibc 2.36"));
    MachineTarget arm = machine({}, 0);
    arm.machine = "aarch64";
    CHECK_THAT(target_misfit(host, arm, {}, true), Catch::Contains("aarch64"));
}

TEST_CASE("target: nvcc's version names its release", "[target]") {
    CHECK(cuda_release("13.0.88") == "13.0");
    CHECK(cuda_release("12.8") == "12.8");
    CHECK(cuda_release("") == "");
    CHECK(cuda_version_number("13.0") == 13000);
    CHECK(cuda_version_number("12.8") == 12080);
    CHECK(cuda_version_number("x") == 0);
}

TEST_CASE("target.json: what is written is read back, and damage is an error", "[target]") {
    auto lib = cuda_library({sm(80), sm(90, "a")}, {sm(90)});
    lib.nvcc_version = "13.0.88";
    lib.cxx_version = "12.2.0";
    auto back = parse_target(render_target(lib));
    REQUIRE(back);
    CHECK(back->sass == lib.sass);
    CHECK(back->ptx == lib.ptx);
    CHECK(back->cuda == "13.0");
    CHECK(back->glibc == "2.36");
    CHECK(back->nvcc_version == "13.0.88");
    CHECK_FALSE(parse_target("not json"));
    CHECK_FALSE(parse_target(R"({"format": 2})"));
    CHECK_FALSE(parse_target(R"({"format": 1, "machine": "x86_64"})"));
    CHECK_FALSE(parse_target(
        R"({"format":1,"machine":"x","glibc":"","cuda":"","cudart":"","nvcc_version":"",)"
        R"("cxx_version":"","sass":["sm_x"],"ptx":[]})"));
}
