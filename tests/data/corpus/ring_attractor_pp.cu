// ring_attractor_pp.cu -- continuous ring-attractor network kernels.
//
// Wrapped in the usual preprocessor scaffolding: an #ifdef __CUDACC__ guard
// (live under nvcc), nested #if 0 blocks with their own #else branches, and
// __host__ qualifiers on the launchers.

#include <cuda_runtime.h>
#include <cmath>
#include <cstdint>
#include "brainevent/common.h"

#ifndef RING_PI
#define RING_PI 3.14159265358979f
#endif

#ifdef __CUDACC__

// Mexican-hat recurrent input: u_i = sum_j w(theta_i - theta_j) r_j
__global__ void ring_conv_kernel(const float* __restrict__ r, float* __restrict__ u,
                                 int32_t n, float j0, float j1) {
    const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.f;
    for (int32_t k = 0; k < n; ++k) {
        const float d = 2.f * RING_PI * float(i - k) / float(n);
        acc += (j0 + j1 * __cosf(d)) * r[k];
    }
    u[i] = acc / float(n);
}

__global__ void ring_step_kernel(const float* __restrict__ u, const float* __restrict__ r,
                                 const float* __restrict__ ext, float* __restrict__ r_out,
                                 int32_t n, float tau, float dt) {
    const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float drive = fmaxf(u[i] + ext[i], 0.f);
    r_out[i] = r[i] + dt / tau * (-r[i] + drive);
}

// @BE ring_recurrent_input
__host__ void ring_recurrent_input(const BE::Tensor rates, BE::Tensor input,
                                   float j0, float j1, int64_t stream) {
    const int32_t n = (int32_t)rates.numel();
    ring_conv_kernel<<<(n + 127) / 128, 128, 0, (cudaStream_t)stream>>>(
        rates.data_ptr<float>(), input.data_ptr<float>(), n, j0, j1);
    BE_CHECK_KERNEL_LAUNCH();
}

#if 0
// A shared-memory version that turned out slower for n <= 4096.
// @BE ring_recurrent_input_smem
__host__ void ring_recurrent_input_smem(const BE::Tensor rates, BE::Tensor input,
                                        float j0, float j1, int64_t stream);
#endif

// @BE ring_step
inline __host__ void ring_step(const BE::Tensor input, const BE::Tensor rates,
                               const BE::Tensor external, BE::Tensor rates_out,
                               float tau, float dt, int64_t stream) {
    BE_CHECK(tau > 0.f) << "ring_step: tau must be positive";
    const int32_t n = (int32_t)rates.numel();
    ring_step_kernel<<<(n + 127) / 128, 128, 0, (cudaStream_t)stream>>>(
        input.data_ptr<float>(), rates.data_ptr<float>(), external.data_ptr<float>(),
        rates_out.data_ptr<float>(), n, tau, dt);
    BE_CHECK_KERNEL_LAUNCH();
}

#endif  // __CUDACC__

#if 0
// Population-vector readout, first attempt.
#if 0
// @BE ring_readout_v0 arg ret stream
#else
// @BE ring_readout_v1 arg ret ret stream
#endif
void ring_readout_v1(const BE::Tensor rates, BE::Tensor angle, BE::Tensor amplitude,
                     int64_t stream);
#else
__global__ void ring_readout_kernel(const float* __restrict__ r, float* __restrict__ out,
                                    int32_t n) {
    __shared__ float sx[256], sy[256];
    float x = 0.f, y = 0.f;
    for (int32_t k = threadIdx.x; k < n; k += blockDim.x) {
        const float th = 2.f * RING_PI * float(k) / float(n);
        x += r[k] * __cosf(th);
        y += r[k] * __sinf(th);
    }
    sx[threadIdx.x] = x;
    sy[threadIdx.x] = y;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            sx[threadIdx.x] += sx[threadIdx.x + s];
            sy[threadIdx.x] += sy[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[0] = atan2f(sy[0], sx[0]);
        out[1] = sqrtf(sx[0] * sx[0] + sy[0] * sy[0]) / float(n);
    }
}

// Returns [angle, amplitude] of the population vector.
// @BE ring_readout
void ring_readout(const BE::Tensor rates, BE::Tensor angle_amplitude, int64_t stream) {
    ring_readout_kernel<<<1, 256, 0, (cudaStream_t)stream>>>(
        rates.data_ptr<float>(), angle_amplitude.data_ptr<float>(), (int32_t)rates.numel());
    BE_CHECK_KERNEL_LAUNCH();
}
#endif
