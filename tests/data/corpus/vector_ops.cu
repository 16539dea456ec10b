// vector_ops.cu -- basic element-wise kernels for float32 arrays.
//
// Every entry point is exported to JAX through a `// @BE` annotation; some
// spell the arg_spec out, the others let bekc infer it from the signature.

#include <cuda_runtime.h>
#include <cstdint>
#include "brainevent/common.h"

namespace {

constexpr int kThreads = 256;

inline int num_blocks(int64_t n) {
    return static_cast<int>((n + kThreads - 1) / kThreads);
}

}  // namespace

__global__ void add_kernel(const float* __restrict__ a,
                           const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

__global__ void sub_kernel(const float* __restrict__ a,
                           const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] - b[i];
}

__global__ void mul_kernel(const float* __restrict__ a,
                           const float* __restrict__ b,
                           float* __restrict__ out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * b[i];
}

__global__ void scale_kernel(const float* x, float* out, int64_t n, float factor) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * factor;
}

__global__ void axpy_kernel(const float* x, const float* y, float* out,
                            int64_t n, float alpha) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaf(alpha, x[i], y[i]);
}

__global__ void clamp_kernel(const float* x, float* out, int64_t n, float lo, float hi) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = fminf(fmaxf(x[i], lo), hi);
}

// @BE vec_add arg arg ret stream
void vec_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    BE_CHECK(a.numel() == b.numel()) << "vec_add: size mismatch";
    int64_t n = a.numel();
    add_kernel<<<num_blocks(n), kThreads, 0, (cudaStream_t)stream>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE vec_sub
void vec_sub(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    BE_CHECK(a.numel() == b.numel()) << "vec_sub: size mismatch";
    int64_t n = a.numel();
    sub_kernel<<<num_blocks(n), kThreads, 0, (cudaStream_t)stream>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE vec_mul arg arg ret stream
void vec_mul(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    int64_t n = a.numel();
    mul_kernel<<<num_blocks(n), kThreads, 0, (cudaStream_t)stream>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE vec_scale arg ret attr.factor:float32 stream
void vec_scale(const BE::Tensor x, BE::Tensor out, float factor, int64_t stream) {
    int64_t n = x.numel();
    scale_kernel<<<num_blocks(n), kThreads, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n, factor);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE vec_axpy
void vec_axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out,
              float alpha, int64_t stream) {
    int64_t n = x.numel();
    axpy_kernel<<<num_blocks(n), kThreads, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n, alpha);
    BE_CHECK_KERNEL_LAUNCH();
}

// Bare attr tokens: the types come from the signature below (float, float).
// @BE vec_clamp arg ret attr.lo attr.hi stream
void vec_clamp(const BE::Tensor x, BE::Tensor out, float lo, float hi, int64_t stream) {
    BE_CHECK(lo <= hi) << "vec_clamp: lo > hi";
    int64_t n = x.numel();
    clamp_kernel<<<num_blocks(n), kThreads, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n, lo, hi);
    BE_CHECK_KERNEL_LAUNCH();
}
