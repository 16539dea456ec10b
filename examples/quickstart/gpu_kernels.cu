// The same vector add and scale on the GPU (seed tutorial, section 1-2).
//
// As on the CPU (cpu_kernels.cpp), each function checks the dtypes and sizes
// its kernel relies on before it launches, and returns early on empty arrays:
// a launch of zero blocks is a CUDA error ("invalid configuration argument").
#include <cuda_runtime.h>

#include "brainevent/common.h"

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    BE_CHECK(a.dtype() == BE::DType::Float32 && b.dtype() == BE::DType::Float32 &&
             out.dtype() == BE::DType::Float32)
        << "vector_add takes float32, got " << a.dtype() << " + " << b.dtype() << " -> "
        << out.dtype();
    int64_t n = a.numel();
    BE_CHECK(b.numel() == n && out.numel() == n)
        << "sizes differ: " << n << " + " << b.numel() << " -> " << out.numel();
    if (n == 0) return;
    add_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}

template <class T>
__global__ void scale_kernel(const T* x, T* out, int64_t n, T factor) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] * factor;
}

// @BE scale_by arg ret attr.scale_factor:float32 stream
void scale_by(const BE::Tensor x, BE::Tensor out, float scale_factor, int64_t stream) {
    BE_CHECK(out.dtype() == x.dtype()) << "out must be " << x.dtype() << ", got " << out.dtype();
    int64_t n = x.numel();
    BE_CHECK(out.numel() == n) << "out has " << out.numel() << " elements, x " << n;
    if (n == 0) return;
    BE_DISPATCH_FLOATING(x.dtype(), scalar_t, {
        scale_kernel<scalar_t><<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
            x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n,
            static_cast<scalar_t>(scale_factor));
    });
    BE_CHECK_KERNEL_LAUNCH();
}
