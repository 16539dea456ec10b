// Test helpers for the compile plan (lib/plan/compile_plan): a translation unit
// of a PlanRequest, a request with fixed tool paths, and argv searches.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "plan/compile_plan.hpp"

namespace bekc::test {

// Fixed paths the plan tests look for in the commands.
inline const std::string kPlanNvcc = "/opt/cuda-13/bin/nvcc";
inline const std::string kPlanCxx = "/usr/bin/g++-12";
inline const std::string kPlanBuild = "/cache/tmp/build.x";
inline const std::string kPlanRuntime = "/cache/runtime/abc/include";

inline PlanUnit plan_unit(const std::string& build_dir, const std::string& file, bool cuda) {
    PlanUnit u;
    u.wrapper = build_dir + "/" + file;
    u.cuda = cuda;
    return u;
}

// A request for `units` under kPlanBuild, with nvcc only when a unit is CUDA.
inline PlanRequest plan_request(std::vector<PlanUnit> units,
                                std::vector<Arch> archs = {Arch{90, ""}}) {
    PlanRequest r;
    r.units = std::move(units);
    bool cuda = false;
    for (const auto& u : r.units) cuda |= u.cuda;
    if (cuda) r.nvcc = Tool{kPlanNvcc, kPlanNvcc, 1, 2};
    r.cxx = Tool{kPlanCxx, kPlanCxx, 3, 4};
    r.archs = std::move(archs);
    r.runtime_include = kPlanRuntime;
    r.library = kPlanBuild + "/libmod.so";
    r.handlers = kPlanBuild + "/bekc_handlers.cpp";
    return r;
}

// The position of `s` in `argv`, or -1.
inline long index_of(const std::vector<std::string>& argv, const std::string& s) {
    auto it = std::find(argv.begin(), argv.end(), s);
    return it == argv.end() ? -1 : static_cast<long>(it - argv.begin());
}

}  // namespace bekc::test
