// Test helper: one translation unit of a PlanRequest, its wrapper in `build_dir`.
#pragma once

#include <string>

#include "plan/compile_plan.hpp"

namespace bekc::test {

inline PlanUnit plan_unit(const std::string& build_dir, const std::string& file, bool cuda) {
    PlanUnit u;
    u.wrapper = build_dir + "/" + file;
    u.cuda = cuda;
    return u;
}

}  // namespace bekc::test
