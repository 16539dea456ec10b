// The CUDA C++ side of bench/numba/bench_numba.py: the same two operations as
// the Numba kernels there, built with bekc.
#include <cuda_runtime.h>

#include "brainevent/common.h"

namespace {

constexpr int kThreads = 256;

__global__ void vector_add_kernel(const float* x, const float* y, float* out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

// The seed tutorial's LIF step (spike detection, then reset) in one kernel.
__global__ void lif_kernel(const float* v, const float* v_th, const float* v_rest, int32_t* spikes,
                           float* v_out, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        const int32_t s = v[i] >= v_th[0] ? 1 : 0;
        spikes[i] = s;
        v_out[i] = s ? v_rest[0] : v[i];
    }
}

int blocks_for(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

}  // namespace

// @BE vector_add
void vector_add(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, int64_t stream) {
    const int64_t n = x.numel();
    vector_add_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
}

// @BE lif_step
void lif_step(const BE::Tensor v, const BE::Tensor v_th, const BE::Tensor v_rest,
              BE::Tensor spikes, BE::Tensor v_out, int64_t stream) {
    const int64_t n = v.numel();
    lif_kernel<<<blocks_for(n), kThreads, 0, (cudaStream_t)stream>>>(
        v.data_ptr<float>(), v_th.data_ptr<float>(), v_rest.data_ptr<float>(),
        spikes.data_ptr<int32_t>(), v_out.data_ptr<float>(), n);
}
