// Benchmark input: one .cu file with two kernels and their bekc entry points,
// written the way brainevent kernels are (brainevent/common.h, BE::Tensor,
// an int64_t stream). bench_build.py compiles it with bekc, with bare nvcc,
// and as the equivalent XLA ffi.h translation unit (ffi_two_handlers.cu).
#include "brainevent/common.h"

__global__ void saxpy_kernel(const float* x, const float* y, float* out, float a, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}

__global__ void relu_kernel(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + 255) / 256); }

// @BE saxpy
void saxpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, float a, int64_t stream) {
    int64_t n = x.numel();
    saxpy_kernel<<<blocks_for(n), 256, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), a, n);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE relu
void relu(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    int64_t n = x.numel();
    relu_kernel<<<blocks_for(n), 256, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}
