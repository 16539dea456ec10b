#include <catch2/catch.hpp>

#include "prep/build_inputs.hpp"
#include "store/runtime_headers.hpp"

using namespace bekc;

TEST_CASE("the runtime object is keyed by the host compiler's environment", "[runtime_object]") {
    BuildInputs plain;
    plain.cache_root = "/c";
    plain.cxx = Tool{"/usr/bin/g++", "/usr/bin/g++", 1, 2};
    BuildInputs same = plain;
    BuildInputs cpath = plain;
    cpath.env.values = {{"CPLUS_INCLUDE_PATH", "/opt/shadow"}};
    BuildInputs linker_only = plain;
    linker_only.env.values = {{"LD_RUN_PATH", "/opt/lib"}};
    BuildInputs other_std = plain;
    other_std.flags.cxx_std = "c++20";
    BuildInputs other_cxx = plain;
    other_cxx.cxx.mtime_ns = 3;
    auto path = [](const BuildInputs& in) { return runtime_object_path(runtime_object_id(in)); };
    CHECK(path(plain) == path(same));
    // A CPLUS_INCLUDE_PATH can shadow <cstdio> in bekc/handler_rt.cpp: its own object.
    CHECK(path(plain) != path(cpath));
    // The linker's variables do not reach a compile.
    CHECK(path(plain) == path(linker_only));
    CHECK(path(plain) != path(other_std));
    CHECK(path(plain) != path(other_cxx));
    CHECK(path(plain).filename() == "bekc_rt.o");
    CHECK(path(plain).string().rfind("/c/runtime/", 0) == 0);
}
