// The trivial kernel of the GPU overhead benchmark, as a bekc user writes it:
// out = x * scale over a small float32 buffer, one launch on XLA's stream.
// The same kernel with its handler written against XLA's ffi.h is
// trivial_xla_ffi.cu.
#include "brainevent/common.h"

__global__ void scale_kernel(const float* x, float* out, float scale, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] * scale;
}

// @BE scale arg ret attr.scale:float32 stream
void scale(const BE::Tensor x, BE::Tensor out, float scale, int64_t stream) {
    const int64_t n = x.numel();
    scale_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0,
                   reinterpret_cast<cudaStream_t>(stream)>>>(x.data_ptr<float>(),
                                                             out.data_ptr<float>(), scale, n);
    BE_CHECK_KERNEL_LAUNCH();
}
