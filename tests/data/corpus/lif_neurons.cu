// lif_neurons.cu -- leaky integrate-and-fire neurons and presynaptic traces.
//
// Two macro families stamp out the entry points:
//   BE_DEFINE_LIF_STEP(SUFFIX, T, S, HAS_REFRAC)  -> lif_step<SUFFIX>
//   BE_DEFINE_SPIKE_TRACE(SUFFIX, SPIKE_T, T, S)    -> spike_trace<SUFFIX>
// T is the storage type of the state, S the type of the scalar parameters.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include "brainevent/common.h"

namespace lif {

template <typename T> __device__ __forceinline__ float ld(const T* p, int64_t i) {
    return static_cast<float>(p[i]);
}
template <> __device__ __forceinline__ float ld<__half>(const __half* p, int64_t i) {
    return __half2float(p[i]);
}
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16* p, int64_t i) {
    return __bfloat162float(p[i]);
}

template <typename T, typename S, bool HAS_REFRAC>
__global__ void lif_step_kernel(const T* __restrict__ v,
                                const T* __restrict__ i_syn,
                                const int32_t* __restrict__ refractory,
                                T* __restrict__ v_out,
                                bool* __restrict__ spike_out,
                                int64_t n, S tau_m, S v_rest, S v_th, S v_reset,
                                float dt) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    S vi = static_cast<S>(ld(v, i));
    if (HAS_REFRAC && refractory[i] > 0) {
        v_out[i] = static_cast<T>(vi);
        spike_out[i] = false;
        return;
    }
    const S dv = (v_rest - vi + static_cast<S>(ld(i_syn, i))) / tau_m;
    vi += static_cast<S>(dt) * dv;
    const bool fired = vi >= v_th;
    v_out[i] = static_cast<T>(fired ? v_reset : vi);
    spike_out[i] = fired;
}

template <typename SPIKE_T, typename T, typename S>
__global__ void spike_trace_kernel(const SPIKE_T* __restrict__ spikes,
                                   const T* __restrict__ trace,
                                   T* __restrict__ trace_out,
                                   int64_t n, S decay) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    S x = static_cast<S>(ld(trace, i)) * decay;
    if (spikes[i] != SPIKE_T(0)) x += S(1);
    trace_out[i] = static_cast<T>(x);
}

inline unsigned grid_1d(int64_t n, int block) {
    return static_cast<unsigned>((n + block - 1) / block);
}

}  // namespace lif

#define BE_DEFINE_LIF_STEP(SUFFIX, T, S, HAS_REFRAC)                           \
void lif_step##SUFFIX(const BE::Tensor v,                                      \
                      const BE::Tensor i_syn,                                  \
                      const BE::Tensor refractory,                             \
                      BE::Tensor v_out,                                        \
                      BE::Tensor spike_out,                                    \
                      S tau_m, S v_rest, S v_th, S v_reset,                    \
                      float dt,                                                \
                      int64_t stream) {                                        \
    const int64_t n = v.numel();                                               \
    BE_CHECK(i_syn.numel() == n) << "lif_step: i_syn has wrong size";          \
    BE_CHECK(tau_m > S(0)) << "lif_step: tau_m must be positive";              \
    lif::lif_step_kernel<T, S, HAS_REFRAC>                                     \
        <<<lif::grid_1d(n, 256), 256, 0, (cudaStream_t)stream>>>(              \
            v.data_ptr<T>(), i_syn.data_ptr<T>(),                              \
            refractory.data_ptr<int32_t>(), v_out.data_ptr<T>(),               \
            spike_out.data_ptr<bool>(), n, tau_m, v_rest, v_th, v_reset, dt);  \
    BE_CHECK_KERNEL_LAUNCH();                                                  \
}

#define BE_DEFINE_SPIKE_TRACE(SUFFIX, SPIKE_T, T, S)                           \
void spike_trace##SUFFIX(const BE::Tensor spikes,                              \
                         const BE::Tensor trace,                               \
                         BE::Tensor trace_out,                                 \
                         S decay,                                              \
                         int64_t stream) {                                     \
    const int64_t n = trace.numel();                                           \
    BE_CHECK(spikes.numel() == n) << "spike_trace: shape mismatch";            \
    lif::spike_trace_kernel<SPIKE_T, T, S>                                     \
        <<<lif::grid_1d(n, 512), 512, 0, (cudaStream_t)stream>>>(              \
            spikes.data_ptr<SPIKE_T>(), trace.data_ptr<T>(),                   \
            trace_out.data_ptr<T>(), n, decay);                                \
    BE_CHECK_KERNEL_LAUNCH();                                                  \
}

// ---- LIF ------------------------------------------------------------------
// @BE lif_step_f32
BE_DEFINE_LIF_STEP(_f32, float, float, false)
// @BE lif_step_f64
BE_DEFINE_LIF_STEP(_f64, double, double, false)
// @BE lif_step_f16
BE_DEFINE_LIF_STEP(_f16, __half, float, false)
// @BE lif_step_bf16
BE_DEFINE_LIF_STEP(_bf16, __nv_bfloat16, float, false)
// @BE lif_step_refrac_f32
BE_DEFINE_LIF_STEP(_refrac_f32, float, float, true)
// @BE lif_step_refrac_f64
BE_DEFINE_LIF_STEP(_refrac_f64, double, double, true)
// @BE lif_step_refrac_f16
BE_DEFINE_LIF_STEP(_refrac_f16, __half, float, true)
// @BE lif_step_refrac_bf16
BE_DEFINE_LIF_STEP(_refrac_bf16, __nv_bfloat16, float, true)

// ---- traces ---------------------------------------------------------------
// @BE spike_trace_bool_f32
BE_DEFINE_SPIKE_TRACE(_bool_f32, bool, float, float)
// @BE spike_trace_bool_f64
BE_DEFINE_SPIKE_TRACE(_bool_f64, bool, double, double)
// @BE spike_trace_bool_f16
BE_DEFINE_SPIKE_TRACE(_bool_f16, bool, __half, float)
// @BE spike_trace_f32_f32
BE_DEFINE_SPIKE_TRACE(_f32_f32, float, float, float)
// @BE spike_trace_f64_f64
BE_DEFINE_SPIKE_TRACE(_f64_f64, double, double, double)
// @BE spike_trace_f16_f16
BE_DEFINE_SPIKE_TRACE(_f16_f16, __half, __half, float)
// @BE spike_trace_u8_f32
BE_DEFINE_SPIKE_TRACE(_u8_f32, uint8_t, float, float)
// @BE spike_trace_i32_f32
BE_DEFINE_SPIKE_TRACE(_i32_f32, int32_t, float, float)
