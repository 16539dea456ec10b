// The bekc-built CUDA implementation of the XLACustomKernel in
// tests/gpu/test_numba_cuda.py.
#include <cuda_runtime.h>

#include "brainevent/common.h"

__global__ void leaky_relu_kernel(const float* x, float* out, int64_t n, float alpha) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.f ? x[i] : alpha * x[i];
}

// @BE leaky_relu
void leaky_relu(const BE::Tensor x, BE::Tensor out, float alpha, int64_t stream) {
    int64_t n = x.numel();
    leaky_relu_kernel<<<static_cast<int>((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n, alpha);
    BE_CHECK_KERNEL_LAUNCH();
}
