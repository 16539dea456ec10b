// coo_event_specs.cu -- event-driven COO mat-vec, with annotations that spell
// the arg_spec out even though the function comes from a macro.
//
// Half-precision variants take the scale as raw bits (uint16_t in C++), so
// their spec must say float16 / bfloat16 explicitly.  Some specs use a bare
// attr.scale, whose type is then read from the macro-expanded signature.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include "brainevent/common.h"

template <typename A> __device__ __forceinline__ float scale_value(A a) { return (float)a; }
template <> __device__ __forceinline__ float scale_value<uint16_t>(uint16_t bits) {
    // Only correct for float16 bits; bfloat16 callers pre-convert on the host.
    __half_raw r; r.x = bits; return __half2float(__half(r));
}

template <typename W> __device__ __forceinline__ float wf(W w) { return (float)w; }
template <> __device__ __forceinline__ float wf<__half>(__half w) { return __half2float(w); }
template <> __device__ __forceinline__ float wf<__nv_bfloat16>(__nv_bfloat16 w) {
    return __bfloat162float(w);
}

template <typename W, typename S, typename A>
__global__ void coo_event_kernel(const int32_t* __restrict__ rows,
                                 const int32_t* __restrict__ cols,
                                 const W* __restrict__ weights,
                                 const S* __restrict__ spikes,
                                 float* __restrict__ out, int64_t nnz, A scale) {
    const int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (k >= nnz) return;
    if (spikes[rows[k]] != S(0)) atomicAdd(&out[cols[k]], wf(weights[k]) * scale_value(scale));
}

#define BE_DEFINE_COO_EVENT_MV(SUFFIX, W, S, A)                                  \
    void coo_event_mv##SUFFIX(const BE::Tensor rows,                             \
                              const BE::Tensor cols,                             \
                              const BE::Tensor weights,                          \
                              const BE::Tensor spikes,                           \
                              BE::Tensor out,                                    \
                              A scale,                                           \
                              int64_t stream) {                                  \
        BE_CHECK(out.dtype() == BE::DType::Float32)                              \
            << "coo_event_mv" #SUFFIX ": accumulates into float32 only";         \
        cudaStream_t s = (cudaStream_t)stream;                                   \
        BE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), s));      \
        const int64_t nnz = rows.numel();                                        \
        coo_event_kernel<W, S, A><<<(unsigned)((nnz + 255) / 256), 256, 0, s>>>( \
            rows.data_ptr<int32_t>(), cols.data_ptr<int32_t>(),                  \
            weights.data_ptr<W>(), spikes.data_ptr<S>(), out.data_ptr<float>(),  \
            nnz, scale);                                                         \
        BE_CHECK_KERNEL_LAUNCH();                                                \
    }

// Fully explicit.
// @BE coo_event_mv_bool_f32 arg arg arg arg ret attr.scale:float32 stream
BE_DEFINE_COO_EVENT_MV(_bool_f32, float, bool, float)
// Bare attr: float from the expansion.
// @BE coo_event_mv_float_f32 arg arg arg arg ret attr.scale stream
BE_DEFINE_COO_EVENT_MV(_float_f32, float, float, float)
// Bare attr: double from the expansion.
// @BE coo_event_mv_bool_f64 arg arg arg arg ret attr.scale stream
BE_DEFINE_COO_EVENT_MV(_bool_f64, double, bool, double)
// Inferred entirely.
// @BE coo_event_mv_u8_f32
BE_DEFINE_COO_EVENT_MV(_u8_f32, float, uint8_t, float)
// @BE coo_event_mv_i8_f32
BE_DEFINE_COO_EVENT_MV(_i8_f32, float, int8_t, int32_t)
// Raw 16-bit scale: explicit type required.
// @BE coo_event_mv_bool_f16 arg arg arg arg ret attr.scale:float16 stream
BE_DEFINE_COO_EVENT_MV(_bool_f16, __half, bool, uint16_t)
// @BE coo_event_mv_bool_bf16 args args args args rets attrs.scale:bfloat16 ctx.stream
BE_DEFINE_COO_EVENT_MV(_bool_bf16, __nv_bfloat16, bool, uint16_t)
// uint16_t inferred without an explicit type is plain uint16.
// @BE coo_event_mv_bool_u16scale
BE_DEFINE_COO_EVENT_MV(_bool_u16scale, float, bool, uint16_t)
