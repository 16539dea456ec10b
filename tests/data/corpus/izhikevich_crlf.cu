// izhikevich_crlf.cu -- Izhikevich (2003) neurons, forward Euler with substeps.
//
// NOTE: this file is saved with Windows (CRLF) line endings on purpose; the
// macro continuations below end in backslash + CR + LF.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include "brainevent/common.h"

template <typename T> __device__ __forceinline__ float izh_ld(T x) { return static_cast<float>(x); }
template <> __device__ __forceinline__ float izh_ld<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float izh_ld<__nv_bfloat16>(__nv_bfloat16 x) {
    return __bfloat162float(x);
}

template <typename T, typename S, int SUBSTEPS>
__global__ void izhikevich_kernel(const T* __restrict__ v, const T* __restrict__ u,
                                  const T* __restrict__ i_ext,
                                  T* __restrict__ v_out, T* __restrict__ u_out,
                                  bool* __restrict__ spikes, int64_t n,
                                  S a, S b, S c, S d, S dt) {
    const int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (k >= n) return;
    S vk = static_cast<S>(izh_ld(v[k]));
    S uk = static_cast<S>(izh_ld(u[k]));
    const S ik = static_cast<S>(izh_ld(i_ext[k]));
    const S h = dt / S(SUBSTEPS);
    bool fired = false;
#pragma unroll
    for (int s = 0; s < SUBSTEPS; ++s) {
        vk += h * (S(0.04) * vk * vk + S(5) * vk + S(140) - uk + ik);
        uk += h * a * (b * vk - uk);
        if (vk >= S(30)) { vk = c; uk += d; fired = true; }
    }
    v_out[k] = static_cast<T>(vk);
    u_out[k] = static_cast<T>(uk);
    spikes[k] = fired;
}

#define BE_DEFINE_IZHIKEVICH(SUFFIX, T, S, SUBSTEPS)                            \
void izhikevich_step##SUFFIX(const BE::Tensor v,                               \
                             const BE::Tensor u,                               \
                             const BE::Tensor i_ext,                           \
                             BE::Tensor v_out,                                 \
                             BE::Tensor u_out,                                 \
                             BE::Tensor spikes,                                \
                             S a, S b, S c, S d,                               \
                             S dt,                                             \
                             int64_t stream) {                                 \
    const int64_t n = v.numel();                                               \
    BE_CHECK(u.numel() == n && i_ext.numel() == n)                             \
        << "izhikevich_step" #SUFFIX ": state size mismatch";                  \
    izhikevich_kernel<T, S, SUBSTEPS>                                          \
        <<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(       \
            v.data_ptr<T>(), u.data_ptr<T>(), i_ext.data_ptr<T>(),             \
            v_out.data_ptr<T>(), u_out.data_ptr<T>(), spikes.data_ptr<bool>(), \
            n, a, b, c, d, dt);                                                \
    BE_CHECK_KERNEL_LAUNCH();                                                  \
}

// @BE izhikevich_step_f32
BE_DEFINE_IZHIKEVICH(_f32, float, float, 1)
// @BE izhikevich_step_f32_x2
BE_DEFINE_IZHIKEVICH(_f32_x2, float, float, 2)
// @BE izhikevich_step_f32_x4
BE_DEFINE_IZHIKEVICH(_f32_x4, float, float, 4)
// @BE izhikevich_step_f64
BE_DEFINE_IZHIKEVICH(_f64, double, double, 1)
// @BE izhikevich_step_f64_x2
BE_DEFINE_IZHIKEVICH(_f64_x2, double, double, 2)
// @BE izhikevich_step_f64_x4
BE_DEFINE_IZHIKEVICH(_f64_x4, double, double, 4)
// @BE izhikevich_step_f16
BE_DEFINE_IZHIKEVICH(_f16, __half, float, 2)
// @BE izhikevich_step_bf16
BE_DEFINE_IZHIKEVICH(_bf16, __nv_bfloat16, float, 2)

// Resets the recovery variable of neurons that just fired (after a
// non-Euler integration step done elsewhere).
__global__ void izh_reset_kernel(const bool* spikes, const float* u, float* u_out,
                                 int64_t n, float d) {
    const int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (k < n) u_out[k] = spikes[k] ? u[k] + d : u[k];
}

// @BE izhikevich_reset_u_f32
void izhikevich_reset_u_f32(const BE::Tensor spikes, const BE::Tensor u,
                            BE::Tensor u_out, float d, int64_t stream) {
    const int64_t n = u.numel();
    izh_reset_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        spikes.data_ptr<bool>(), u.data_ptr<float>(), u_out.data_ptr<float>(), n, d);
    BE_CHECK_KERNEL_LAUNCH();
}
