// A realistic CUDA kernel file, built (not run) by
// tests/python/test_handlers_cuda_build.py with `bekc build --arch sm_90`:
// the library must export the bekc_ffi_* handlers and nothing of the user's
// own host functions, kernels or device functions.
#include "brainevent/common.h"

namespace {

constexpr int kThreads = 256;

// A host helper the user does not export.
inline unsigned int blocks_for(int64_t n) {
    return static_cast<unsigned int>((n + kThreads - 1) / kThreads);
}

}  // namespace

__device__ float user_device_helper(float a, float b) { return a + b; }

__global__ void vector_add_kernel(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = user_device_helper(a[i], b[i]);
}

__global__ void scale_kernel(const float* x, float* out, float factor, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] * factor;
}

template <class T>
__global__ void axpy_kernel(const T* x, const T* y, T* out, T alpha, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}

// A host function with external linkage that is not annotated.
void user_host_function_not_exported(BE::Tensor t) { (void)t; }

// @BE vector_add
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    BE_CHECK(a.numel() == b.numel() && a.numel() == out.numel()) << "sizes differ";
    vector_add_kernel<<<blocks_for(a.numel()), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), a.numel());
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE scale_by arg ret attr.scale_factor:float32 stream
void scale_by(const BE::Tensor x, BE::Tensor out, float scale_factor, int64_t stream) {
    scale_kernel<<<blocks_for(x.numel()), kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), scale_factor, x.numel());
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE axpy
void axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, double alpha, int64_t stream) {
    BE_DISPATCH_FLOATING(x.dtype(), scalar_t, {
        axpy_kernel<scalar_t><<<blocks_for(x.numel()), kThreads, 0,
                                reinterpret_cast<cudaStream_t>(stream)>>>(
            x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
            static_cast<scalar_t>(alpha), x.numel());
    });
    BE_CHECK_KERNEL_LAUNCH();
}
