// Compiler detection shared by the brainevent kernel headers.
//
// The same headers are compiled by nvcc (host and device passes of a .cu
// file), by clang in CUDA mode, and by a plain g++/clang++ for .cpp files that
// have no CUDA at all; everything compiler-specific is decided here, once.
#pragma once

#include <stddef.h>  // ::size_t, which kernels use unqualified
#include <stdint.h>  // ::int64_t, which kernels use unqualified (`int64_t stream`)

#include <cstddef>
#include <cstdint>

// Set by bekc's copies of the brainevent headers and by no other. A user's -I
// may put brainevent's own headers ahead of bekc's; bekc's handler code tests
// this macro to tell which BE::Tensor it compiles against (brainevent's has
// no BE::Tensor::Unchecked constructor, for one).
#define BEKC_BRAINEVENT_HEADERS 1

// A CUDA compiler is parsing this file (any pass); CUDA keywords exist.
#if defined(__CUDACC__)
#define BE_CUDA_COMPILER 1
#else
#define BE_CUDA_COMPILER 0
#endif

// This pass generates device code. Macros that must behave differently on the
// GPU (BE_CHECK prints and traps there instead of throwing) test this; nvcc and
// clang preprocess every file once per pass, so the choice is made per pass.
#if defined(__CUDA_ARCH__)
#define BE_DEVICE_CODE 1
#else
#define BE_DEVICE_CODE 0
#endif

// Marks functions callable from both host and device code. Empty without CUDA so
// the headers stay plain C++ for CPU builds.
#if BE_CUDA_COMPILER
#define BE_HOST_DEVICE __host__ __device__
#else
#define BE_HOST_DEVICE
#endif

// The CUDA runtime API is available: always in a CUDA compilation, and in a
// plain C++ file that included <cuda_runtime.h> (or cuda_runtime_api.h)
// *before* brainevent/common.h. BE_CUDA_CHECK and BE_CHECK_KERNEL_LAUNCH exist
// only then; a CPU-only build has no cudaError_t to check.
#if BE_CUDA_COMPILER || defined(CUDART_VERSION)
#define BE_HAS_CUDA_RUNTIME 1
#else
#define BE_HAS_CUDA_RUNTIME 0
#endif
