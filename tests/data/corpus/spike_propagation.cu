// spike_propagation.cu -- spike propagation through fixed-number connectivity
// and through a synaptic delay ring buffer.
//
// "fcn" = fixed number of connections per presynaptic neuron: the indices are
// a dense [n_pre, n_conn] matrix instead of CSR.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include "brainevent/common.h"

namespace prop {

template <typename S> __device__ __forceinline__ bool fired(S s) { return s != S(0); }
template <> __device__ __forceinline__ bool fired<bool>(bool s) { return s; }

template <typename W>
__device__ __forceinline__ void atomic_add(W* p, W v) { atomicAdd(p, v); }

// One block per presynaptic neuron; threads walk its fixed-size target list.
template <typename W, typename S, bool HOMO>
__global__ void fcn_scatter(const W* __restrict__ weights, const int32_t* __restrict__ indices,
                            const S* __restrict__ spikes, W* __restrict__ out,
                            int32_t n_pre, int32_t n_conn) {
    const int32_t i = blockIdx.x;
    if (i >= n_pre || !fired(spikes[i])) return;
    for (int32_t k = threadIdx.x; k < n_conn; k += blockDim.x) {
        const int64_t e = (int64_t)i * n_conn + k;
        atomic_add(&out[indices[e]], HOMO ? weights[0] : weights[e]);
    }
}

template <typename T>
__global__ void delay_scatter(const bool* __restrict__ spikes,
                              const int32_t* __restrict__ delays,
                              const T* __restrict__ weights,
                              T* __restrict__ buffer, int32_t depth, int32_t n,
                              int32_t head) {
    const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || !spikes[i]) return;
    const int32_t slot = (head + delays[i]) % depth;
    atomicAdd(&buffer[(int64_t)slot * n + i], weights[i]);
}

}  // namespace prop

#define BE_DEFINE_FCN_EVENT_MV(SUFFIX, W, S, HOMO)                                \
    void fcn_event_mv##SUFFIX(const BE::Tensor weights,                           \
                              const BE::Tensor indices,                           \
                              const BE::Tensor spikes,                            \
                              BE::Tensor out,                                     \
                              int64_t stream) {                                   \
        BE_CHECK(indices.ndim() == 2) << "fcn_event_mv: indices must be 2-D";     \
        const int32_t n_pre = (int32_t)indices.size(0);                           \
        const int32_t n_conn = (int32_t)indices.size(1);                          \
        cudaStream_t s = (cudaStream_t)stream;                                    \
        BE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), s));       \
        prop::fcn_scatter<W, S, HOMO><<<n_pre, 64, 0, s>>>(                       \
            weights.data_ptr<W>(), indices.data_ptr<int32_t>(),                   \
            spikes.data_ptr<S>(), out.data_ptr<W>(), n_pre, n_conn);              \
        BE_CHECK_KERNEL_LAUNCH();                                                 \
    }

#define BE_DEFINE_DELAY_PROPAGATE(SUFFIX, T)                                      \
    void delay_propagate##SUFFIX(const BE::Tensor spikes,                         \
                                 const BE::Tensor delays,                         \
                                 const BE::Tensor weights,                        \
                                 const BE::Tensor buffer,                         \
                                 BE::Tensor buffer_out,                           \
                                 int32_t head,                                    \
                                 int64_t stream) {                                \
        const int32_t depth = (int32_t)buffer.size(0), n = (int32_t)buffer.size(1); \
        cudaStream_t s = (cudaStream_t)stream;                                    \
        BE_CUDA_CHECK(cudaMemcpyAsync(buffer_out.data_ptr(), buffer.data_ptr(),   \
                                      buffer.nbytes(), cudaMemcpyDeviceToDevice,  \
                                      s));                                        \
        prop::delay_scatter<T><<<(n + 255) / 256, 256, 0, s>>>(                   \
            spikes.data_ptr<bool>(), delays.data_ptr<int32_t>(),                  \
            weights.data_ptr<T>(), buffer_out.data_ptr<T>(), depth, n, head);     \
        BE_CHECK_KERNEL_LAUNCH();                                                 \
    }

// @BE fcn_event_mv_homo_bool_f32
BE_DEFINE_FCN_EVENT_MV(_homo_bool_f32, float, bool, true)
// @BE fcn_event_mv_hetero_bool_f32
BE_DEFINE_FCN_EVENT_MV(_hetero_bool_f32, float, bool, false)
// @BE fcn_event_mv_homo_float_f32
BE_DEFINE_FCN_EVENT_MV(_homo_float_f32, float, float, true)
// @BE fcn_event_mv_hetero_float_f32
BE_DEFINE_FCN_EVENT_MV(_hetero_float_f32, float, float, false)
// @BE fcn_event_mv_homo_bool_f64
BE_DEFINE_FCN_EVENT_MV(_homo_bool_f64, double, bool, true)
// @BE fcn_event_mv_hetero_bool_f64
BE_DEFINE_FCN_EVENT_MV(_hetero_bool_f64, double, bool, false)
// @BE fcn_event_mv_homo_bool_f16
BE_DEFINE_FCN_EVENT_MV(_homo_bool_f16, __half, bool, true)
// @BE fcn_event_mv_hetero_bool_f16
BE_DEFINE_FCN_EVENT_MV(_hetero_bool_f16, __half, bool, false)
// @BE fcn_event_mv_hetero_bool_bf16
BE_DEFINE_FCN_EVENT_MV(_hetero_bool_bf16, __nv_bfloat16, bool, false)

// @BE delay_propagate_f32
BE_DEFINE_DELAY_PROPAGATE(_f32, float)
// @BE delay_propagate_f64
BE_DEFINE_DELAY_PROPAGATE(_f64, double)
// @BE delay_propagate_f16
BE_DEFINE_DELAY_PROPAGATE(_f16, __half)
