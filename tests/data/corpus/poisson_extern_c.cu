// poisson_extern_c.cu -- Poisson and regular spike generators.
//
// This file is also linked into a C test harness, so the entry points have C
// linkage: one via `extern "C"` on the declaration, the rest via a block.

#include <cuda_runtime.h>
#include <curand_kernel.h>
#include <cstdint>
#include "brainevent/common.h"

__global__ void poisson_kernel(const float* __restrict__ rates, bool* __restrict__ spikes,
                               int64_t n, float dt, uint32_t seed, uint64_t step) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    curandStatePhilox4_32_10_t st;
    curand_init(seed, i, step * 4, &st);
    spikes[i] = curand_uniform(&st) < rates[i] * dt * 1e-3f;
}

__global__ void regular_kernel(bool* __restrict__ spikes, int64_t n, int32_t period,
                               int32_t phase, int64_t t) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) spikes[i] = ((t + phase + i) % period) == 0;
}

__global__ void bernoulli_kernel(const float* __restrict__ p, float* __restrict__ out,
                                 int64_t n, uint32_t seed) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    curandStatePhilox4_32_10_t st;
    curand_init(seed, i, 0, &st);
    out[i] = curand_uniform(&st) < p[i] ? 1.f : 0.f;
}

// @BE poisson_spikes_f32
extern "C" void poisson_spikes_f32(const BE::Tensor rates, BE::Tensor spikes, float dt,
                                   uint32_t seed, uint64_t step, int64_t stream) {
    const int64_t n = rates.numel();
    poisson_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        rates.data_ptr<float>(), spikes.data_ptr<bool>(), n, dt, seed, step);
    BE_CHECK_KERNEL_LAUNCH();
}

extern "C" {

// @BE regular_spikes
void regular_spikes(BE::Tensor spikes, int32_t period, int32_t phase, int64_t t,
                    int64_t stream) {
    BE_CHECK(period > 0) << "regular_spikes: period must be positive";
    const int64_t n = spikes.numel();
    regular_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        spikes.data_ptr<bool>(), n, period, phase, t);
    BE_CHECK_KERNEL_LAUNCH();
}

    // @BE bernoulli_sample_f32 arg ret attr.seed:uint32 stream
    void bernoulli_sample_f32(const BE::Tensor p, BE::Tensor out, uint32_t seed,
                              int64_t stream) {
        const int64_t n = p.numel();
        bernoulli_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
            p.data_ptr<float>(), out.data_ptr<float>(), n, seed);
        BE_CHECK_KERNEL_LAUNCH();
    }

}  // extern "C"
