// homeostasis_variadic.cu -- slow, rate-based plasticity rules.
//
// All rules share one launcher shape: read firing rates and weights, write
// updated weights.  They differ only in their scalar hyper-parameters, which
// are passed to BE_DEFINE_RATE_RULE as a variadic parameter list, while the
// names forwarded to the kernel come as one parenthesised argument.

#include <cuda_runtime.h>
#include <cstdint>
#include "brainevent/common.h"

#define BE_EXPAND(...) __VA_ARGS__

template <typename T, typename A>
__global__ void homeostatic_kernel(const T* rates, const T* w, T* w_out, int64_t n,
                                   A target_rate, A eta) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) w_out[i] = w[i] * (T(1) + T(eta) * (T(target_rate) - rates[i]));
}

template <typename T, typename A>
__global__ void synaptic_decay_kernel(const T* rates, const T* w, T* w_out, int64_t n,
                                      A tau, A dt) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    (void)rates;
    if (i < n) w_out[i] = w[i] * exp(-T(dt) / T(tau));
}

template <typename T, typename A>
__global__ void intrinsic_kernel(const T* rates, const T* w, T* w_out, int64_t n,
                                 A target_rate, A eta, int32_t window) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        T err = (T(target_rate) - rates[i]) / T(window > 0 ? window : 1);
        w_out[i] = w[i] + T(eta) * err;
    }
}

template <typename T, typename A>
__global__ void bcm_kernel(const T* rates, const T* w, T* w_out, int64_t n,
                           A theta, A eta, bool clip) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        T r = rates[i];
        T nw = w[i] + T(eta) * r * (r - T(theta));
        w_out[i] = (clip && nw < T(0)) ? T(0) : nw;
    }
}

// NAME is the full exported name; ARGNAMES is "(a, b, ...)"; the variadic
// tail is the C++ parameter list of the scalar hyper-parameters.
#define BE_DEFINE_RATE_RULE(NAME, T, KERNEL, ARGNAMES, ...)                     \
    void NAME(const BE::Tensor rates,                                          \
              const BE::Tensor weights,                                        \
              BE::Tensor weights_out,                                          \
              __VA_ARGS__,                                                     \
              int64_t stream) {                                                \
        const int64_t n = weights.numel();                                     \
        BE_CHECK(weights_out.numel() == n) << #NAME ": size mismatch";         \
        KERNEL<T><<<(unsigned)((n + 255) / 256), 256, 0,                       \
                    (cudaStream_t)stream>>>(                                   \
            rates.data_ptr<T>(), weights.data_ptr<T>(),                        \
            weights_out.data_ptr<T>(), n, BE_EXPAND ARGNAMES);                 \
        BE_CHECK_KERNEL_LAUNCH();                                              \
    }

// @BE homeostatic_scaling_f32
BE_DEFINE_RATE_RULE(homeostatic_scaling_f32, float, homeostatic_kernel,
                    (target_rate, eta), float target_rate, float eta)
// @BE homeostatic_scaling_f64
BE_DEFINE_RATE_RULE(homeostatic_scaling_f64, double, homeostatic_kernel,
                    (target_rate, eta), double target_rate, double eta)
// @BE synaptic_decay_f32
BE_DEFINE_RATE_RULE(synaptic_decay_f32, float, synaptic_decay_kernel,
                    (tau, dt), float tau, float dt)
// @BE synaptic_decay_f64
BE_DEFINE_RATE_RULE(synaptic_decay_f64, double, synaptic_decay_kernel,
                    (tau, dt), double tau, double dt)
// @BE intrinsic_plasticity_f32
BE_DEFINE_RATE_RULE(intrinsic_plasticity_f32, float, intrinsic_kernel,
                    (target_rate, eta, window),
                    float target_rate, float eta, int32_t window)
// @BE intrinsic_plasticity_f64
BE_DEFINE_RATE_RULE(intrinsic_plasticity_f64, double, intrinsic_kernel,
                    (target_rate, eta, window),
                    double target_rate, double eta, int window)
// @BE bcm_rule_f32
BE_DEFINE_RATE_RULE(bcm_rule_f32, float, bcm_kernel,
                    (theta, eta, clip), float theta, float eta, bool clip)
// @BE bcm_rule_f64
BE_DEFINE_RATE_RULE(bcm_rule_f64, double, bcm_kernel,
                    (theta, eta, clip), double theta, double eta, bool clip)
