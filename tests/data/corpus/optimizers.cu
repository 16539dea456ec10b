// optimizers.cu -- fused parameter updates (SGD with momentum, Adam, AdamW).
//
// Each update reads the parameters and optimizer state and returns the new
// parameters and state as separate outputs (XLA buffers are immutable).

#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include "brainevent/common.h"

__global__ void sgd_momentum_kernel(const float* __restrict__ p, const float* __restrict__ g,
                                    const float* __restrict__ m, float* __restrict__ p_out,
                                    float* __restrict__ m_out, int64_t n, float lr,
                                    float momentum, float weight_decay, bool nesterov) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float gi = g[i] + weight_decay * p[i];
    const float mi = momentum * m[i] + gi;
    m_out[i] = mi;
    p_out[i] = p[i] - lr * (nesterov ? gi + momentum * mi : mi);
}

template <typename T>
__global__ void adam_kernel(const T* __restrict__ p, const T* __restrict__ g,
                            const T* __restrict__ m, const T* __restrict__ v,
                            T* __restrict__ p_out, T* __restrict__ m_out, T* __restrict__ v_out,
                            int64_t n, double lr, double beta1, double beta2, double eps,
                            double weight_decay, int64_t step, bool decoupled) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    T gi = g[i];
    if (!decoupled) gi += T(weight_decay) * p[i];
    const T mi = T(beta1) * m[i] + T(1 - beta1) * gi;
    const T vi = T(beta2) * v[i] + T(1 - beta2) * gi * gi;
    const T mh = mi / T(1 - pow(beta1, (double)step));
    const T vh = vi / T(1 - pow(beta2, (double)step));
    T pi = p[i];
    if (decoupled) pi -= T(lr * weight_decay) * pi;
    p_out[i] = pi - T(lr) * mh / (sqrt(vh) + T(eps));
    m_out[i] = mi;
    v_out[i] = vi;
}

static inline unsigned nb(int64_t n) { return static_cast<unsigned>((n + 255) / 256); }

// @BE sgd_momentum_f32
void sgd_momentum_f32(const BE::Tensor params, const BE::Tensor grads, const BE::Tensor mom,
                      BE::Tensor params_out, BE::Tensor mom_out,
                      float lr, float momentum, float weight_decay, bool nesterov,
                      int64_t stream) {
    const int64_t n = params.numel();
    BE_CHECK(grads.numel() == n && mom.numel() == n) << "sgd_momentum_f32: shape mismatch";
    sgd_momentum_kernel<<<nb(n), 256, 0, (cudaStream_t)stream>>>(
        params.data_ptr<float>(), grads.data_ptr<float>(), mom.data_ptr<float>(),
        params_out.data_ptr<float>(), mom_out.data_ptr<float>(), n, lr, momentum,
        weight_decay, nesterov);
    BE_CHECK_KERNEL_LAUNCH();
}

// Hyper-parameters are float64 attributes; the step count is int64.
// @BE adam_f32
void adam_f32(const BE::Tensor params, const BE::Tensor grads,
              const BE::Tensor m, const BE::Tensor v,
              BE::Tensor params_out, BE::Tensor m_out, BE::Tensor v_out,
              double lr, double beta1, double beta2, double eps,
              double weight_decay, int64_t step,
              int64_t stream) {
    BE_CHECK(step >= 1) << "adam_f32: step counts from 1, got " << step;
    const int64_t n = params.numel();
    adam_kernel<float><<<nb(n), 256, 0, (cudaStream_t)stream>>>(
        params.data_ptr<float>(), grads.data_ptr<float>(), m.data_ptr<float>(),
        v.data_ptr<float>(), params_out.data_ptr<float>(), m_out.data_ptr<float>(),
        v_out.data_ptr<float>(), n, lr, beta1, beta2, eps, weight_decay, step, false);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE adamw_f32 arg arg arg arg ret ret ret attr.lr:float64 attr.beta1:float64 attr.beta2:float64 attr.eps:float64 attr.weight_decay:float64 attr.step:int64 stream
void adamw_f32(const BE::Tensor params, const BE::Tensor grads,
               const BE::Tensor m, const BE::Tensor v,
               BE::Tensor params_out, BE::Tensor m_out, BE::Tensor v_out,
               double lr, double beta1, double beta2, double eps,
               double weight_decay, int64_t step, int64_t stream) {
    const int64_t n = params.numel();
    adam_kernel<float><<<nb(n), 256, 0, (cudaStream_t)stream>>>(
        params.data_ptr<float>(), grads.data_ptr<float>(), m.data_ptr<float>(),
        v.data_ptr<float>(), params_out.data_ptr<float>(), m_out.data_ptr<float>(),
        v_out.data_ptr<float>(), n, lr, beta1, beta2, eps, weight_decay, step, true);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE adamw_f64
void adamw_f64(const BE::Tensor params, const BE::Tensor grads,
               const BE::Tensor m, const BE::Tensor v,
               BE::Tensor params_out, BE::Tensor m_out, BE::Tensor v_out,
               double lr, double beta1, double beta2, double eps,
               double weight_decay, long long step, int64_t stream) {
    const int64_t n = params.numel();
    adam_kernel<double><<<nb(n), 256, 0, (cudaStream_t)stream>>>(
        params.data_ptr<double>(), grads.data_ptr<double>(), m.data_ptr<double>(),
        v.data_ptr<double>(), params_out.data_ptr<double>(), m_out.data_ptr<double>(),
        v_out.data_ptr<double>(), n, lr, beta1, beta2, eps, weight_decay, step, true);
    BE_CHECK_KERNEL_LAUNCH();
}
