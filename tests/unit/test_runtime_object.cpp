#include <catch2/catch.hpp>

#include "driver/runtime_headers.hpp"

using namespace bekc;

TEST_CASE("the runtime object is keyed by the host compiler's environment", "[runtime_object]") {
    RuntimeObjectRequest plain{"/c", "/c/include", "/usr/bin/g++", "g++ id", "c++17", ""};
    RuntimeObjectRequest same = plain;
    RuntimeObjectRequest cpath = plain;
    cpath.cxx_env = "CPLUS_INCLUDE_PATH=/opt/shadow\n";
    RuntimeObjectRequest other_std = plain;
    other_std.cxx_std = "c++20";
    CHECK(runtime_object_path(plain) == runtime_object_path(same));
    // A CPLUS_INCLUDE_PATH can shadow <cstdio> in bekc/handler_rt.cpp: its own object.
    CHECK(runtime_object_path(plain) != runtime_object_path(cpath));
    CHECK(runtime_object_path(plain) != runtime_object_path(other_std));
    CHECK(runtime_object_path(plain).filename() == "bekc_rt.o");
    CHECK(runtime_object_path(plain).string().rfind("/c/runtime/", 0) == 0);
}
