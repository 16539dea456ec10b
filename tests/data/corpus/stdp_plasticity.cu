// stdp_plasticity.cu -- pair-based STDP on CSR synapses.
//
// The on-pre and on-post updates always come in pairs, so one outer macro
// (BE_DEFINE_STDP) expands both inner macros; the two exported functions of
// one instantiation carry two annotations stacked above the invocation.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include "brainevent/common.h"

namespace stdp_detail {

template <typename T> __device__ __forceinline__ float f(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float f<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}

template <typename T, typename S>
__global__ void depress_on_pre(const bool* __restrict__ pre_spikes,
                               const T* __restrict__ post_trace,
                               const int32_t* __restrict__ indices,
                               const int32_t* __restrict__ indptr,
                               T* __restrict__ w, int32_t n_pre,
                               S a_minus, S w_min, S w_max) {
    const int pre = blockIdx.x;
    if (pre >= n_pre || !pre_spikes[pre]) return;
    for (int j = indptr[pre] + threadIdx.x; j < indptr[pre + 1]; j += blockDim.x) {
        S nw = static_cast<S>(f(w[j])) - a_minus * static_cast<S>(f(post_trace[indices[j]]));
        nw = nw < w_min ? w_min : (nw > w_max ? w_max : nw);
        w[j] = static_cast<T>(nw);
    }
}

template <typename T, typename S>
__global__ void potentiate_on_post(const bool* __restrict__ post_spikes,
                                   const T* __restrict__ pre_trace,
                                   const int32_t* __restrict__ indices,
                                   const int32_t* __restrict__ indptr,
                                   T* __restrict__ w, int32_t n_pre,
                                   S a_plus, S w_min, S w_max) {
    const int pre = blockIdx.x;
    if (pre >= n_pre) return;
    const S x = static_cast<S>(f(pre_trace[pre]));
    for (int j = indptr[pre] + threadIdx.x; j < indptr[pre + 1]; j += blockDim.x) {
        if (!post_spikes[indices[j]]) continue;
        S nw = static_cast<S>(f(w[j])) + a_plus * x;
        w[j] = static_cast<T>(nw > w_max ? w_max : (nw < w_min ? w_min : nw));
    }
}

}  // namespace stdp_detail

#define BE_DEFINE_STDP_ON_PRE(SUFFIX, T, S)                                     \
void stdp_on_pre##SUFFIX(const BE::Tensor pre_spikes,                          \
                         const BE::Tensor post_trace,                          \
                         const BE::Tensor indices,                             \
                         const BE::Tensor indptr,                              \
                         const BE::Tensor weights,                             \
                         BE::Tensor weights_out,                               \
                         S a_minus, S w_min, S w_max,                          \
                         int64_t stream) {                                     \
    cudaStream_t s = (cudaStream_t)stream;                                     \
    BE_CUDA_CHECK(cudaMemcpyAsync(weights_out.data_ptr(), weights.data_ptr(),  \
                                  weights.nbytes(), cudaMemcpyDeviceToDevice,  \
                                  s));                                         \
    const int32_t n_pre = static_cast<int32_t>(indptr.numel() - 1);          \
    stdp_detail::depress_on_pre<T, S><<<n_pre, 128, 0, s>>>(                   \
        pre_spikes.data_ptr<bool>(), post_trace.data_ptr<T>(),                 \
        indices.data_ptr<int32_t>(), indptr.data_ptr<int32_t>(),               \
        weights_out.data_ptr<T>(), n_pre, a_minus, w_min, w_max);              \
    BE_CHECK_KERNEL_LAUNCH();                                                  \
}

#define BE_DEFINE_STDP_ON_POST(SUFFIX, T, S)                                    \
void stdp_on_post##SUFFIX(const BE::Tensor post_spikes,                        \
                          const BE::Tensor pre_trace,                          \
                          const BE::Tensor indices,                            \
                          const BE::Tensor indptr,                             \
                          const BE::Tensor weights,                            \
                          BE::Tensor weights_out,                              \
                          S a_plus, S w_min, S w_max,                          \
                          int64_t stream) {                                    \
    cudaStream_t s = (cudaStream_t)stream;                                     \
    BE_CUDA_CHECK(cudaMemcpyAsync(weights_out.data_ptr(), weights.data_ptr(),  \
                                  weights.nbytes(), cudaMemcpyDeviceToDevice,  \
                                  s));                                         \
    const int32_t n_pre = static_cast<int32_t>(indptr.numel() - 1);          \
    stdp_detail::potentiate_on_post<T, S><<<n_pre, 128, 0, s>>>(               \
        post_spikes.data_ptr<bool>(), pre_trace.data_ptr<T>(),                 \
        indices.data_ptr<int32_t>(), indptr.data_ptr<int32_t>(),               \
        weights_out.data_ptr<T>(), n_pre, a_plus, w_min, w_max);               \
    BE_CHECK_KERNEL_LAUNCH();                                                  \
}

// Nested family: one invocation defines both halves of the rule.
#define BE_DEFINE_STDP(SUFFIX, T, S)                                            \
    BE_DEFINE_STDP_ON_PRE(SUFFIX, T, S)                                         \
    BE_DEFINE_STDP_ON_POST(SUFFIX, T, S)

// @BE stdp_on_pre_f32
// @BE stdp_on_post_f32
BE_DEFINE_STDP(_f32, float, float)

// @BE stdp_on_pre_f64
// @BE stdp_on_post_f64
BE_DEFINE_STDP(_f64, double, double)

// @BE stdp_on_pre_f16
// @BE stdp_on_post_f16
BE_DEFINE_STDP(_f16, __half, float)

// Annotation order need not follow definition order.
// @BE stdp_on_post_bf16
// @BE stdp_on_pre_bf16
BE_DEFINE_STDP(_bf16, __nv_bfloat16, float)

// Only the depression half exists for the "anti-Hebbian" variant.
// @BE stdp_on_pre_anti_f32
BE_DEFINE_STDP_ON_PRE(_anti_f32, float, float)
