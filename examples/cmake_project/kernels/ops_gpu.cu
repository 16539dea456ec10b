// The GPU version of add_bias (built with -DWITH_CUDA=ON).
#include <cuda_runtime.h>

#include "brainevent/common.h"
#include "ops.h"

__global__ void add_bias_kernel(const float* in, float* out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = in[i] + ops::kBias;
}

// @BE add_bias
void add_bias(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    BE_CHECK(x.dtype() == BE::DType::Float32 && out.dtype() == BE::DType::Float32)
        << "add_bias takes float32, got " << x.dtype() << " -> " << out.dtype();
    int64_t n = x.numel();
    BE_CHECK(out.numel() == n) << "out has " << out.numel() << " elements, x " << n;
    if (n == 0) return;  // a launch of zero blocks is a CUDA error
    add_bias_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}
