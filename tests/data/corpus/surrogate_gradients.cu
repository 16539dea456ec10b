// surrogate_gradients.cu -- spike functions and their surrogate gradients.
//
// Forward: spike = H(v - v_th).  Backward: grad_in = grad_out * sg'(v - v_th)
// for a family of smooth surrogates.  Names are pasted as NAME##_grad_##SUFFIX.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cmath>
#include <cstdint>
#include "brainevent/common.h"

namespace sg {

struct sigmoid {
    template <typename A> __device__ static A d(A x, A alpha) {
        const A s = A(1) / (A(1) + exp(-alpha * x));
        return alpha * s * (A(1) - s);
    }
};
struct arctan {
    template <typename A> __device__ static A d(A x, A alpha) {
        const A pi = A(3.141592653589793);
        const A t = pi / A(2) * alpha * x;
        return alpha / A(2) / (A(1) + t * t);
    }
};
struct fast_sigmoid {  // "SuperSpike"
    template <typename A> __device__ static A d(A x, A alpha) {
        const A t = A(1) + alpha * fabs(x);
        return A(1) / (t * t);
    }
};
struct piecewise_linear {
    template <typename A> __device__ static A d(A x, A alpha) {
        const A t = A(1) - fabs(x) / alpha;
        return t > A(0) ? t / alpha : A(0);
    }
};

template <typename T, typename A, typename F>
__global__ void grad_kernel(const T* __restrict__ v, const T* __restrict__ g_out,
                            T* __restrict__ g_in, int64_t n, A alpha, A v_th) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) g_in[i] = static_cast<T>(A(g_out[i]) * F::d(A(v[i]) - v_th, alpha));
}

template <typename T>
__global__ void heaviside_kernel(const T* __restrict__ v, T* __restrict__ s, int64_t n,
                                 T v_th) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) s[i] = v[i] >= v_th ? T(1) : T(0);
}

}  // namespace sg

#define BE_DEFINE_SURROGATE(NAME, SUFFIX, T, A)                                     \
    void NAME##_grad_##SUFFIX(const BE::Tensor v,                                   \
                              const BE::Tensor grad_out,                            \
                              BE::Tensor grad_in,                                   \
                              A alpha,                                              \
                              A v_th,                                               \
                              int64_t stream) {                                     \
        BE_CHECK(alpha > A(0)) << #NAME ": alpha must be positive";                 \
        const int64_t n = v.numel();                                                \
        sg::grad_kernel<T, A, sg::NAME>                                             \
            <<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(        \
                v.data_ptr<T>(), grad_out.data_ptr<T>(), grad_in.data_ptr<T>(), n,  \
                alpha, v_th);                                                       \
        BE_CHECK_KERNEL_LAUNCH();                                                   \
    }

// @BE sigmoid_grad_f32
BE_DEFINE_SURROGATE(sigmoid, f32, float, float)
// @BE sigmoid_grad_f64
BE_DEFINE_SURROGATE(sigmoid, f64, double, double)
// @BE arctan_grad_f32
BE_DEFINE_SURROGATE(arctan, f32, float, float)
// @BE arctan_grad_f64
BE_DEFINE_SURROGATE(arctan, f64, double, double)
// @BE fast_sigmoid_grad_f32
BE_DEFINE_SURROGATE(fast_sigmoid, f32, float, float)
// @BE fast_sigmoid_grad_f64
BE_DEFINE_SURROGATE(fast_sigmoid, f64, double, double)
// @BE piecewise_linear_grad_f32
BE_DEFINE_SURROGATE(piecewise_linear, f32, float, float)
// @BE piecewise_linear_grad_f64
BE_DEFINE_SURROGATE(piecewise_linear, f64, double, double)

// Forward spike functions.  (The next annotation has trailing blanks.)
// @BE heaviside_f32   
void heaviside_f32(const BE::Tensor v, BE::Tensor spikes, float v_th, int64_t stream) {
    const int64_t n = v.numel();
    sg::heaviside_kernel<float><<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        v.data_ptr<float>(), spikes.data_ptr<float>(), n, v_th);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE heaviside_f64 arg ret attr.v_th:float64 stream	
void heaviside_f64(const BE::Tensor v, BE::Tensor spikes, double v_th, int64_t stream) {
    const int64_t n = v.numel();
    sg::heaviside_kernel<double><<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        v.data_ptr<double>(), spikes.data_ptr<double>(), n, v_th);
    BE_CHECK_KERNEL_LAUNCH();
}
