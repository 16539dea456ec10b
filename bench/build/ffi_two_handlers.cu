// Baseline for bench_build.py: the same two kernels as two_kernels.cu, with
// their XLA FFI handlers written against XLA's own ffi.h in one translation
// unit (what brainevent's load_cuda_inline generates and compiles). Needs
// -I "$(python -c 'import jax.ffi; print(jax.ffi.include_dir())')".
#include <cstdint>

#include <cuda_runtime.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void saxpy_kernel(const float* x, const float* y, float* out, float a, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

__global__ void relu_kernel(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + 255) / 256); }

static ffi::Error launch_error() {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
    return ffi::Error::Success();
}

static ffi::Error saxpy_impl(cudaStream_t stream, ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> y,
                             ffi::ResultBuffer<ffi::F32> out, float a) {
    int64_t n = static_cast<int64_t>(x.element_count());
    saxpy_kernel<<<blocks_for(n), 256, 0, stream>>>(x.typed_data(), y.typed_data(),
                                                    out->typed_data(), a, n);
    return launch_error();
}

static ffi::Error relu_impl(cudaStream_t stream, ffi::Buffer<ffi::F32> x,
                            ffi::ResultBuffer<ffi::F32> out) {
    int64_t n = static_cast<int64_t>(x.element_count());
    relu_kernel<<<blocks_for(n), 256, 0, stream>>>(x.typed_data(), out->typed_data(), n);
    return launch_error();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(saxpy_ffi, saxpy_impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("a"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(relu_ffi, relu_impl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>(),
                              {ffi::Traits::kCmdBufferCompatible});
