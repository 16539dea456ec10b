// The C++ standard a build asks for, checked before anything compiles
// (docs/cli.md, "--std"): bekc's runtime headers need C++17, and a compile
// under an older standard would fail with hundreds of errors inside them.
#pragma once

#include <expected>

#include "plan/cxx_standard.hpp"
#include "plan/flags.hpp"
#include "toolchain/compiler_env.hpp"
#include "util/error.hpp"

namespace bekc {

// A usage error for a --std that names no C++ standard or one older than
// C++17, and for an older one asked for anywhere else a compiler of the build
// reads (plan/cxx_standard.hpp: standard_requests): --cxx-flag and
// --cuda-flag (brainevent's extra_cflags and extra_cuda_cflags), the
// -Xcompiler values among them, $NVCC_PREPEND_FLAGS and $NVCC_APPEND_FLAGS,
// and the response files these name (`files`). It names the flag as the user
// gave it, the minimum, and what to pass instead.
std::expected<void, Error> check_cxx_standards(const CompileFlags& flags,
                                               const NvccEnvFlags& nvcc_env,
                                               const ResponseFileWords& files = {});

}  // namespace bekc
