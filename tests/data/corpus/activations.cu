// activations.cu -- element-wise activation functions for float32/float64/
// float16/bfloat16 tensors.  Every entry point is stamped out by one of two
// macros; the exported name is `<op>_<dtype>` (pasted as OP##_##SUFFIX).

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cmath>
#include "brainevent/common.h"

static constexpr int kBlock = 256;

static inline unsigned int blocks_for(int64_t n) {
    return static_cast<unsigned int>((n + kBlock - 1) / kBlock);
}

// ---- conversions -----------------------------------------------------------
__device__ __forceinline__ float to_acc(float x) { return x; }
__device__ __forceinline__ double to_acc(double x) { return x; }
__device__ __forceinline__ float to_acc(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_acc(float x);
template <> __device__ __forceinline__ float from_acc<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_acc<__half>(float x) { return __float2half(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float x) {
    return __float2bfloat16(x);
}
__device__ __forceinline__ double from_acc_d(double x) { return x; }

// ---- functors --------------------------------------------------------------
struct relu_functor {
    template <typename A> __device__ A operator()(A x) const { return x > A(0) ? x : A(0); }
};
struct sigmoid_functor {
    template <typename A> __device__ A operator()(A x) const { return A(1) / (A(1) + exp(-x)); }
};
struct silu_functor {
    template <typename A> __device__ A operator()(A x) const { return x / (A(1) + exp(-x)); }
};
struct gelu_functor {
    template <typename A> __device__ A operator()(A x) const {
        const A k = A(0.7978845608028654);  // sqrt(2 / pi)
        return A(0.5) * x * (A(1) + tanh(k * (x + A(0.044715) * x * x * x)));
    }
};
struct leaky_relu_functor {
    template <typename A> __device__ A operator()(A x, A alpha) const { return x > A(0) ? x : alpha * x; }
};
struct elu_functor {
    template <typename A> __device__ A operator()(A x, A alpha) const {
        return x > A(0) ? x : alpha * (exp(x) - A(1));
    }
};

template <typename T, typename F>
__global__ void unary_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t n) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        auto v = to_acc(x[i]);
        out[i] = static_cast<T>(F()(v));
    }
}

template <typename T, typename F, typename S>
__global__ void param_unary_kernel(const T* __restrict__ x, T* __restrict__ out,
                                   int64_t n, S alpha) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        auto v = to_acc(x[i]);
        out[i] = static_cast<T>(F()(v, static_cast<decltype(v)>(alpha)));
    }
}

// ---- entry points ----------------------------------------------------------
#define BE_DEFINE_UNARY(OP, SUFFIX, T)                                         \
    void OP##_##SUFFIX(const BE::Tensor x, BE::Tensor out, int64_t stream) {   \
        const int64_t n = x.numel();                                           \
        BE_CHECK(out.numel() == n) << #OP ": output size mismatch";            \
        unary_kernel<T, OP##_functor>                                          \
            <<<blocks_for(n), kBlock, 0, (cudaStream_t)stream>>>(              \
                x.data_ptr<T>(), out.data_ptr<T>(), n);                        \
        BE_CHECK_KERNEL_LAUNCH();                                              \
    }

#define BE_DEFINE_PARAM_UNARY(OP, SUFFIX, T, S)                                \
    void OP##_##SUFFIX(const BE::Tensor x,                                     \
                       BE::Tensor out,                                         \
                       S alpha,                                                \
                       int64_t stream) {                                       \
        const int64_t n = x.numel();                                           \
        param_unary_kernel<T, OP##_functor, S>                                 \
            <<<blocks_for(n), kBlock, 0, (cudaStream_t)stream>>>(              \
                x.data_ptr<T>(), out.data_ptr<T>(), n, alpha);                 \
        BE_CHECK_KERNEL_LAUNCH();                                              \
    }

// @BE relu_f32
BE_DEFINE_UNARY(relu, f32, float)
// @BE relu_f64
BE_DEFINE_UNARY(relu, f64, double)
// @BE relu_f16
BE_DEFINE_UNARY(relu, f16, __half)
// @BE relu_bf16
BE_DEFINE_UNARY(relu, bf16, __nv_bfloat16)

// @BE sigmoid_f32
BE_DEFINE_UNARY(sigmoid, f32, float)
// @BE sigmoid_f64
BE_DEFINE_UNARY(sigmoid, f64, double)
// @BE sigmoid_f16
BE_DEFINE_UNARY(sigmoid, f16, __half)
// @BE sigmoid_bf16
BE_DEFINE_UNARY(sigmoid, bf16, __nv_bfloat16)

// @BE silu_f32
BE_DEFINE_UNARY(silu, f32, float)
// @BE silu_f64
BE_DEFINE_UNARY(silu, f64, double)

// @BE gelu_f32
BE_DEFINE_UNARY(gelu, f32, float)
// @BE gelu_f64
BE_DEFINE_UNARY(gelu, f64, double)

// Parametric activations: the slope is a float32 attribute for the 32- and
// 16-bit variants and a float64 attribute for the double variant.
// @BE leaky_relu_f32
BE_DEFINE_PARAM_UNARY(leaky_relu, f32, float, float)
// @BE leaky_relu_f64
BE_DEFINE_PARAM_UNARY(leaky_relu, f64, double, double)
// @BE leaky_relu_f16
BE_DEFINE_PARAM_UNARY(leaky_relu, f16, __half, float)
// @BE elu_f32
BE_DEFINE_PARAM_UNARY(elu, f32, float, float)
// @BE elu_f64
BE_DEFINE_PARAM_UNARY(elu, f64, double, double)
// @BE elu_bf16
BE_DEFINE_PARAM_UNARY(elu, bf16, __nv_bfloat16, float)
