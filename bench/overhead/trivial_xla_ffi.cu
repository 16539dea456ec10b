// The trivial kernel of the GPU overhead benchmark with its handler written by
// hand against XLA's own C++ API (xla/ffi/api/ffi.h): out = x * scale.
// Compiled at benchmark time with nvcc -shared against jax.ffi.include_dir().
#include <cstdint>

#include <cuda_runtime.h>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

__global__ void scale_kernel(const float* x, float* out, float scale, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] * scale;
}

static ffi::Error ScaleImpl(cudaStream_t stream, ffi::Buffer<ffi::F32> x,
                            ffi::ResultBuffer<ffi::F32> out, float scale) {
    const int64_t n = static_cast<int64_t>(x.element_count());
    scale_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
        x.typed_data(), out->typed_data(), scale, n);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
    return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(xla_ffi_scale, ScaleImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("scale"),
                              {ffi::Traits::kCmdBufferCompatible});
