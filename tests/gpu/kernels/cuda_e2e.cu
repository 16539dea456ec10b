// Kernels for tests/gpu/test_cuda_handlers_gpu.py: CUDA handlers called by JAX on a real GPU.
#include <cuda_runtime.h>

#include "brainevent/common.h"

namespace {

constexpr int kThreads = 256;
inline int blocks_for(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

__global__ void scale_kernel(const float* x, float* out, int64_t n, float f) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] * f;
}

__global__ void split_kernel(const float* x, float* pos, float* neg, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        pos[i] = x[i] > 0.f ? x[i] : 0.f;
        neg[i] = x[i] < 0.f ? x[i] : 0.f;
    }
}

// Writes every attribute into a float64 vector so the test can read them back.
__global__ void attrs_kernel(double* out, bool b, int8_t i8, uint8_t u8, int16_t i16,
                             uint16_t u16, int32_t i32, uint32_t u32, int64_t i64, uint64_t u64,
                             float f32, double f64, uint16_t h, uint16_t bh) {
    out[0] = b; out[1] = i8; out[2] = u8; out[3] = i16; out[4] = u16; out[5] = i32;
    out[6] = u32; out[7] = static_cast<double>(i64); out[8] = static_cast<double>(u64);
    out[9] = f32; out[10] = f64; out[11] = h; out[12] = bh;
}

// out[r, c] = x[r, c] * 10 + r, using the tensor's strides on the device.
__global__ void rows_kernel(BE::Tensor x, BE::Tensor out) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= x.numel()) return;
    int64_t r = i / x.stride(0), c = i % x.stride(0);
    out.data_ptr<float>()[r * out.stride(0) + c * out.stride(1)] =
        x.data_ptr<float>()[r * x.stride(0) + c] * 10.f + static_cast<float>(r);
}

__global__ void scalar_kernel(const float* x, float* out) { *out = *x * 2.f + 1.f; }

template <class T>
__global__ void axpb_kernel(const T* x, T* out, int64_t n, T a, T b) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = a * x[i] + b;
}

__global__ void inc_kernel(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] + 1.f;
}

}  // namespace

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    int64_t n = a.numel();
    add_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE scale_by arg ret attr.scale_factor:float32 stream
void scale_by(const BE::Tensor x, BE::Tensor out, float scale_factor, int64_t stream) {
    int64_t n = x.numel();
    scale_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n, scale_factor);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE split
void split(const BE::Tensor x, BE::Tensor pos, BE::Tensor neg, int64_t stream) {
    int64_t n = x.numel();
    split_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), pos.data_ptr<float>(), neg.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE all_attrs arg ret attr.b attr.i8 attr.u8 attr.i16 attr.u16 attr.i32 attr.u32 attr.i64 attr.u64 attr.f32 attr.f64 attr.h:float16 attr.bh:bfloat16 stream
void all_attrs(const BE::Tensor x, BE::Tensor out, bool b, int8_t i8, uint8_t u8, int16_t i16,
               uint16_t u16, int32_t i32, uint32_t u32, int64_t i64, uint64_t u64, float f32,
               double f64, uint16_t h, uint16_t bh, int64_t stream) {
    BE_CHECK(out.numel() == 13) << "out must have 13 elements, got " << out.numel();
    (void)x;
    attrs_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(out.data_ptr<double>(), b, i8, u8, i16, u16,
                                                     i32, u32, i64, u64, f32, f64, h, bh);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE rows
void rows(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    BE_CHECK(x.ndim() == 2) << "rows expects a 2-D input, got " << x.ndim() << "-D";
    rows_kernel<<<blocks_for(x.numel()), kThreads, 0, (cudaStream_t)stream>>>(x, out);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE scalar_affine
void scalar_affine(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    BE_CHECK(x.ndim() == 0 && x.numel() == 1) << "expected a 0-d input";
    scalar_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(x.data_ptr<float>(), out.data_ptr<float>());
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE axpb arg ret attr.a:float64 attr.b:float64 stream
void axpb(const BE::Tensor x, BE::Tensor out, double a, double b, int64_t stream) {
    int64_t n = x.numel();
    BE_DISPATCH_FLOATING(x.dtype(), scalar_t, {
        axpb_kernel<scalar_t><<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
            x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n, static_cast<scalar_t>(a),
            static_cast<scalar_t>(b));
    });
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE checked_scale arg ret attr.n:int32 stream
void checked_scale(const BE::Tensor x, BE::Tensor out, int32_t n, int64_t stream) {
    BE_CHECK(n > 0) << "n must be positive, got " << n;
    int64_t len = x.numel();
    scale_kernel<<<blocks_for(len), kThreads, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), len, static_cast<float>(n));
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE increment
void increment(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    int64_t n = x.numel();
    inc_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(x.data_ptr<float>(),
                                                                      out.data_ptr<float>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}
