// event_csr_spmm.cu -- event-driven CSR @ dense-matrix products.
//
// Spikes come as a [n_pre, batch] matrix (batch of trials); the output is
// [n_post, batch].  Invocations below carry comments inside their argument
// lists and between the annotation and the invocation.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>
#include "brainevent/common.h"

template <typename S> __device__ __forceinline__ bool active(S s) { return s != S(0); }
template <> __device__ __forceinline__ bool active<bool>(bool s) { return s; }

template <typename W> __device__ __forceinline__ void acc_add(W* p, W v) { atomicAdd(p, v); }

// grid: (n_pre, ceil(batch / blockDim.x)); each thread owns one batch column.
template <typename W, typename S, bool HOMO>
__global__ void event_spmm_kernel(const W* __restrict__ weights,
                                  const int32_t* __restrict__ indices,
                                  const int32_t* __restrict__ indptr,
                                  const S* __restrict__ spikes,
                                  W* __restrict__ out, int32_t batch) {
    const int32_t i = blockIdx.x;
    const int32_t b = blockIdx.y * blockDim.x + threadIdx.x;
    if (b >= batch || !active(spikes[(int64_t)i * batch + b])) return;
    for (int32_t k = indptr[i]; k < indptr[i + 1]; ++k)
        acc_add(&out[(int64_t)indices[k] * batch + b], HOMO ? weights[0] : weights[k]);
}

#define BE_DEFINE_EVENT_SPMM(SUFFIX, W, S, HOMO)                                  \
    void event_csr_spmm##SUFFIX(const BE::Tensor weights,                         \
                                const BE::Tensor indices,                         \
                                const BE::Tensor indptr,                          \
                                const BE::Tensor spikes,                          \
                                BE::Tensor out,                                   \
                                int64_t stream) {                                 \
        BE_CHECK(spikes.ndim() == 2) << "event_csr_spmm: spikes must be 2-D";     \
        const int32_t n_pre = (int32_t)(indptr.numel() - 1);                      \
        const int32_t batch = (int32_t)spikes.size(1);                            \
        cudaStream_t s = (cudaStream_t)stream;                                    \
        BE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), s));       \
        dim3 grid(n_pre, (batch + 63) / 64);                                      \
        event_spmm_kernel<W, S, HOMO><<<grid, 64, 0, s>>>(                        \
            weights.data_ptr<W>(), indices.data_ptr<int32_t>(),                   \
            indptr.data_ptr<int32_t>(), spikes.data_ptr<S>(), out.data_ptr<W>(),  \
            batch);                                                               \
        BE_CHECK_KERNEL_LAUNCH();                                                 \
    }

// @BE event_csr_spmm_homo_bool_f32
/* shared scalar weight, boolean spikes */
BE_DEFINE_EVENT_SPMM(_homo_bool_f32, float, bool, true)

// @BE event_csr_spmm_hetero_bool_f32
// (one weight per synapse)
BE_DEFINE_EVENT_SPMM(_hetero_bool_f32 /* suffix */, float /* weights */, bool /* spikes */,
                     false /* homo */)

// @BE event_csr_spmm_homo_float_f32

BE_DEFINE_EVENT_SPMM(_homo_float_f32, float, float, true)
// @BE event_csr_spmm_hetero_float_f32
BE_DEFINE_EVENT_SPMM(
    _hetero_float_f32,  // suffix
    float,              // weight type
    float,              // spike type
    false)              // heterogeneous
// @BE event_csr_spmm_homo_bool_f64
BE_DEFINE_EVENT_SPMM(_homo_bool_f64, double, bool, true)
// @BE event_csr_spmm_hetero_bool_f64
BE_DEFINE_EVENT_SPMM(_hetero_bool_f64, double, bool, false)
// @BE event_csr_spmm_homo_bool_f16
BE_DEFINE_EVENT_SPMM(_homo_bool_f16, __half, bool, true)
// @BE event_csr_spmm_hetero_bool_f16
BE_DEFINE_EVENT_SPMM(_hetero_bool_f16, __half, bool, false)
