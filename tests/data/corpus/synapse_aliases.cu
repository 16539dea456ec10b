// synapse_aliases.cu -- synaptic current models.
//
// These annotations were written against the older brainevent grammar and use
// its aliases (args / rets / ctx.stream / attrs.<name>); bekc normalises them.

#include <cuda_runtime.h>
#include <cstdint>
#include <cmath>
#include "brainevent/common.h"

#define BE_GRID(n) (unsigned)(((n) + 255) / 256), 256

__global__ void current_kernel(const float* g, const float* v, float* i_syn, int64_t n,
                               float e_rev) {
    int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (k < n) i_syn[k] = g[k] * (e_rev - v[k]);
}

__global__ void alpha_kernel(const float* g, float* g_out, int64_t n, float decay) {
    int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (k < n) g_out[k] = g[k] * decay;
}

__global__ void nmda_kernel(const double* g, const double* v, double* i_syn,
                            double* block, int64_t n, double mg, double e_rev) {
    int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (k >= n) return;
    const double b = 1.0 / (1.0 + mg / 3.57 * exp(-0.062 * v[k]));
    block[k] = b;
    i_syn[k] = g[k] * b * (e_rev - v[k]);
}

// Reversal potential fixed at 0 mV (excitatory).
// @BE syn_current_exc args args rets ctx.stream
void syn_current_exc(const BE::Tensor g, const BE::Tensor v, BE::Tensor i_syn,
                     int64_t stream) {
    const int64_t n = g.numel();
    current_kernel<<<BE_GRID(n), 0, (cudaStream_t)stream>>>(
        g.data_ptr<float>(), v.data_ptr<float>(), i_syn.data_ptr<float>(), n, 0.f);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE syn_current args args rets attrs.e_rev:float32 ctx.stream
void syn_current(const BE::Tensor g, const BE::Tensor v, BE::Tensor i_syn,
                 float e_rev, int64_t stream) {
    const int64_t n = g.numel();
    current_kernel<<<BE_GRID(n), 0, (cudaStream_t)stream>>>(
        g.data_ptr<float>(), v.data_ptr<float>(), i_syn.data_ptr<float>(), n, e_rev);
    BE_CHECK_KERNEL_LAUNCH();
}

// attrs.<name> without a type: taken from the signature (float -> float32).
// @BE syn_alpha_decay args rets attrs.decay ctx.stream
void syn_alpha_decay(const BE::Tensor g, BE::Tensor g_out, float decay, int64_t stream) {
    const int64_t n = g.numel();
    alpha_kernel<<<BE_GRID(n), 0, (cudaStream_t)stream>>>(
        g.data_ptr<float>(), g_out.data_ptr<float>(), n, decay);
    BE_CHECK_KERNEL_LAUNCH();
}

// Mixed spellings in one spec.
// @BE syn_nmda args arg rets ret attrs.mg_conc attr.e_rev:float64 stream
void syn_nmda(const BE::Tensor g, const BE::Tensor v, BE::Tensor i_syn, BE::Tensor mg_block,
              double mg_conc, double e_rev, int64_t stream) {
    const int64_t n = g.numel();
    nmda_kernel<<<BE_GRID(n), 0, (cudaStream_t)stream>>>(
        g.data_ptr<double>(), v.data_ptr<double>(), i_syn.data_ptr<double>(),
        mg_block.data_ptr<double>(), n, mg_conc, e_rev);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE syn_gap_junction arg args ret attrs.g_gap:float32 ctx.stream
void syn_gap_junction(const BE::Tensor v_pre, const BE::Tensor v_post, BE::Tensor i_gap,
                      float g_gap, int64_t stream) {
    const int64_t n = v_pre.numel();
    // i = g_gap * (v_pre - v_post), reusing the current kernel with e_rev folded in.
    current_kernel<<<BE_GRID(n), 0, (cudaStream_t)stream>>>(
        v_pre.data_ptr<float>(), v_post.data_ptr<float>(), i_gap.data_ptr<float>(), n,
        g_gap);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE syn_delay_buffer args rets attrs.delay_steps:int32 attrs.wrap ctx.stream
void syn_delay_buffer(const BE::Tensor history, BE::Tensor out, int32_t delay_steps,
                      bool wrap, int64_t stream) {
    BE_CHECK(history.ndim() == 2) << "syn_delay_buffer: history must be [T, N]";
    const int64_t steps = history.size(0), n = history.size(1);
    int64_t t = wrap ? (delay_steps % steps) : (delay_steps < steps ? delay_steps : steps - 1);
    BE_CUDA_CHECK(cudaMemcpyAsync(out.data_ptr(), history.data_ptr<float>() + t * n,
                                  n * sizeof(float), cudaMemcpyDeviceToDevice,
                                  (cudaStream_t)stream));
}
