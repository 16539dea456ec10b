// event_csr.cu -- event-driven CSR sparse matrix-vector products.
//
// y = W @ s where s is a (binary) spike vector: only the rows of active
// presynaptic neurons are touched.  "homo" connectivity stores a single
// weight shared by every synapse, "hetero" stores one weight per synapse.
//
// Entry points (all generated):
//   binary_csrmv<SUFFIX>    gather form, one warp per postsynaptic row
//   binary_csrmv_t<SUFFIX>  scatter form, one warp per presynaptic spike

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>
#include "brainevent/common.h"

#define WARP_SIZE 32

template <typename T> __device__ __forceinline__ float as_float(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float as_float<__half>(__half v) { return __half2float(v); }

template <typename S> __device__ __forceinline__ bool is_active(S s) { return s != S(0); }
template <> __device__ __forceinline__ bool is_active<bool>(bool s) { return s; }

// Gather: row r of the transposed matrix collects all active inputs.
template <typename W_T, typename SPIKE_T, bool HOMO>
__global__ void binary_csrmv_gather(const W_T* __restrict__ weights,
                                    const int32_t* __restrict__ indices,
                                    const int32_t* __restrict__ indptr,
                                    const SPIKE_T* __restrict__ spikes,
                                    W_T* __restrict__ out, int32_t n_rows) {
    const int row = blockIdx.x * (blockDim.x / WARP_SIZE) + threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    if (row >= n_rows) return;
    float acc = 0.f;
    const float w0 = HOMO ? as_float(weights[0]) : 0.f;
    for (int j = indptr[row] + lane; j < indptr[row + 1]; j += WARP_SIZE) {
        if (is_active(spikes[indices[j]])) {
            acc += HOMO ? w0 : as_float(weights[j]);
        }
    }
    #pragma unroll
    for (int off = WARP_SIZE / 2; off > 0; off >>= 1) {
        acc += __shfl_down_sync(0xffffffffu, acc, off);
    }
    if (lane == 0) out[row] = static_cast<W_T>(acc);
}

// Scatter: every active presynaptic neuron pushes its row with atomics.
template <typename W_T, typename SPIKE_T, bool HOMO>
__global__ void binary_csrmv_scatter(const W_T* __restrict__ weights,
                                     const int32_t* __restrict__ indices,
                                     const int32_t* __restrict__ indptr,
                                     const SPIKE_T* __restrict__ spikes,
                                     W_T* __restrict__ out, int32_t n_pre) {
    const int pre = blockIdx.x * (blockDim.x / WARP_SIZE) + threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    if (pre >= n_pre || !is_active(spikes[pre])) return;
    for (int j = indptr[pre] + lane; j < indptr[pre + 1]; j += WARP_SIZE) {
        const W_T w = HOMO ? weights[0] : weights[j];
        atomicAdd(&out[indices[j]], w);
    }
}

#define BE_DEFINE_BINARY_CSRMV(SUFFIX, W_T, SPIKE_T, HOMO)                        \
    void binary_csrmv##SUFFIX(const BE::Tensor weights,                           \
                              const BE::Tensor indices,                           \
                              const BE::Tensor indptr,                            \
                              const BE::Tensor spikes,                            \
                              BE::Tensor out,                                     \
                              int64_t stream) {                                   \
        const int32_t n_rows = static_cast<int32_t>(indptr.numel() - 1);        \
        BE_CHECK(out.numel() == n_rows) << "binary_csrmv: bad output size";       \
        BE_CHECK(!(HOMO) || weights.numel() == 1)                                 \
            << "binary_csrmv: homo weights must be a scalar";                     \
        const int warps_per_block = 8;                                            \
        const int blocks = (n_rows + warps_per_block - 1) / warps_per_block;      \
        binary_csrmv_gather<W_T, SPIKE_T, HOMO>                                   \
            <<<blocks, warps_per_block * WARP_SIZE, 0, (cudaStream_t)stream>>>(   \
                weights.data_ptr<W_T>(), indices.data_ptr<int32_t>(),             \
                indptr.data_ptr<int32_t>(), spikes.data_ptr<SPIKE_T>(),           \
                out.data_ptr<W_T>(), n_rows);                                     \
        BE_CHECK_KERNEL_LAUNCH();                                                 \
    }

#define BE_DEFINE_BINARY_CSRMV_T(SUFFIX, W_T, SPIKE_T, HOMO)                      \
    void binary_csrmv_t##SUFFIX(const BE::Tensor weights,                         \
                                const BE::Tensor indices,                         \
                                const BE::Tensor indptr,                          \
                                const BE::Tensor spikes,                          \
                                BE::Tensor out,                                   \
                                int64_t stream) {                                 \
        const int32_t n_pre = static_cast<int32_t>(indptr.numel() - 1);         \
        cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);                  \
        BE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), s));       \
        const int warps_per_block = 8;                                            \
        const int blocks = (n_pre + warps_per_block - 1) / warps_per_block;       \
        binary_csrmv_scatter<W_T, SPIKE_T, HOMO>                                  \
            <<<blocks, warps_per_block * WARP_SIZE, 0, s>>>(                      \
                weights.data_ptr<W_T>(), indices.data_ptr<int32_t>(),             \
                indptr.data_ptr<int32_t>(), spikes.data_ptr<SPIKE_T>(),           \
                out.data_ptr<W_T>(), n_pre);                                      \
        BE_CHECK_KERNEL_LAUNCH();                                                 \
    }

// @BE binary_csrmv_homo_bool_f32
BE_DEFINE_BINARY_CSRMV(_homo_bool_f32, float, bool, true)
// @BE binary_csrmv_homo_float_f32
BE_DEFINE_BINARY_CSRMV(_homo_float_f32, float, float, true)
// @BE binary_csrmv_hetero_bool_f32
BE_DEFINE_BINARY_CSRMV(_hetero_bool_f32, float, bool, false)
// @BE binary_csrmv_hetero_float_f32
BE_DEFINE_BINARY_CSRMV(_hetero_float_f32, float, float, false)
// @BE binary_csrmv_homo_bool_f64
BE_DEFINE_BINARY_CSRMV(_homo_bool_f64, double, bool, true)
// @BE binary_csrmv_hetero_bool_f64
BE_DEFINE_BINARY_CSRMV(_hetero_bool_f64, double, bool, false)
// @BE binary_csrmv_homo_bool_f16
BE_DEFINE_BINARY_CSRMV(_homo_bool_f16, __half, bool, true)
// @BE binary_csrmv_hetero_bool_f16
BE_DEFINE_BINARY_CSRMV(_hetero_bool_f16, __half, bool, false)

// @BE binary_csrmv_t_homo_bool_f32
BE_DEFINE_BINARY_CSRMV_T(_homo_bool_f32, float, bool, true)
// @BE binary_csrmv_t_homo_float_f32
BE_DEFINE_BINARY_CSRMV_T(_homo_float_f32, float, float, true)
// @BE binary_csrmv_t_hetero_bool_f32
BE_DEFINE_BINARY_CSRMV_T(_hetero_bool_f32, float, bool, false)
// @BE binary_csrmv_t_hetero_float_f32
BE_DEFINE_BINARY_CSRMV_T(_hetero_float_f32, float, float, false)
// @BE binary_csrmv_t_homo_bool_f64
BE_DEFINE_BINARY_CSRMV_T(_homo_bool_f64, double, bool, true)
// @BE binary_csrmv_t_hetero_bool_f64
BE_DEFINE_BINARY_CSRMV_T(_hetero_bool_f64, double, bool, false)
// @BE binary_csrmv_t_homo_bool_f16
BE_DEFINE_BINARY_CSRMV_T(_homo_bool_f16, __half, bool, true)
// @BE binary_csrmv_t_hetero_bool_f16
BE_DEFINE_BINARY_CSRMV_T(_hetero_bool_f16, __half, bool, false)
