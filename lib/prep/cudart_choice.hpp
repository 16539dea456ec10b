// Which CUDA runtime a CUDA library links (docs/cli.md, "--cudart"): the
// toolkit's shared libcudart.so.N, whose soname a JAX process with CUDA has
// already loaded, or nvcc's static one.
#pragma once

#include "prep/build_inputs.hpp"
#include "prep/reporter.hpp"
#include "toolchain/compiler_env.hpp"
#include "util/error.hpp"

namespace bekc {

// nvcc's --cudart as flags.cudart ("shared", "static" or "" for the
// default): bekc's --cudart, a -cudart option in the nvcc or link flags
// (brainevent hands its extra_cuda_cflags to the nvcc that links), or one in
// $NVCC_PREPEND_FLAGS or $NVCC_APPEND_FLAGS (which nvcc reads around bekc's
// own arguments). The flags' options leave them, so the link names the
// runtime once. A value other than shared or static, a -cudart without one,
// or two choices that differ are a usage error naming where each came from.
// Without a CUDA input (`cuda` false) only bekc's own --cudart is checked,
// and cleared.
std::expected<void, Error> take_cudart_option(CompileFlags& flags, bool cuda,
                                              const NvccEnvFlags& nvcc_env);

// flags.cudart made "shared" (with in.cudart_library) or "static" for a CUDA
// build: shared by default, static where the toolkit has no libcudart.so.N,
// nvcc's linker options cannot carry its path, it lies under
// $BEKC_BASE_DIR, or nvcc's device link runs and the toolkit has no
// libcudart.so for its -lcudart (a pip toolkit); -v says why. An explicit
// shared that cannot be had is a Toolchain error.
std::expected<void, Error> resolve_cudart(BuildInputs& in, const Reporter& report);

}  // namespace bekc
