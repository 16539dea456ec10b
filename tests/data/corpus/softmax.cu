// softmax.cu -- numerically stable row softmax and friends (attention helpers).

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include "brainevent/common.h"

namespace attn {

__device__ __forceinline__ float warp_reduce_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_reduce_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T> __device__ __forceinline__ float load(const T* p, int64_t i) { return (float)p[i]; }
template <> __device__ __forceinline__ float load<__half>(const __half* p, int64_t i) { return __half2float(p[i]); }
template <typename T> __device__ __forceinline__ void store(T* p, int64_t i, float v) { p[i] = (T)v; }
template <> __device__ __forceinline__ void store<__half>(__half* p, int64_t i, float v) { p[i] = __float2half(v); }

// One warp per row.  `mask` may be null; `causal` hides columns > row.
template <typename T, bool LOG>
__global__ void softmax_rows(const T* __restrict__ x, const bool* __restrict__ mask,
                             T* __restrict__ y, int64_t rows, int64_t cols,
                             float inv_temperature, bool causal) {
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    auto visible = [&](int64_t c) {
        if (causal && c > row) return false;
        return mask == nullptr || mask[row * cols + c];
    };
    float m = -FLT_MAX;
    for (int64_t c = lane; c < cols; c += 32)
        if (visible(c)) m = fmaxf(m, load(xr, c) * inv_temperature);
    m = warp_reduce_max(m);
    float s = 0.f;
    for (int64_t c = lane; c < cols; c += 32)
        if (visible(c)) s += __expf(load(xr, c) * inv_temperature - m);
    s = warp_reduce_sum(s);
    const float log_s = __logf(s);
    for (int64_t c = lane; c < cols; c += 32) {
        float z = load(xr, c) * inv_temperature - m;
        float v = visible(c) ? (LOG ? z - log_s : __expf(z) / s) : (LOG ? -INFINITY : 0.f);
        store(yr, c, v);
    }
}

template <typename T, bool LOG>
void launch(const BE::Tensor& x, const bool* mask, BE::Tensor& y, float temperature,
            bool causal, cudaStream_t s) {
    BE_CHECK(x.ndim() == 2) << "softmax: expected a 2-D input";
    BE_CHECK(temperature > 0.f) << "softmax: temperature must be > 0";
    const int64_t rows = x.size(0), cols = x.size(1);
    const int warps = 4;
    softmax_rows<T, LOG><<<(unsigned)((rows + warps - 1) / warps), warps * 32, 0, s>>>(
        x.data_ptr<T>(), mask, y.data_ptr<T>(), rows, cols, 1.f / temperature, causal);
    BE_CHECK_KERNEL_LAUNCH();
}

}  // namespace attn

// @BE softmax_rows_f32
void softmax_rows_f32(const BE::Tensor x, BE::Tensor y, int64_t stream) {
    attn::launch<float, false>(x, nullptr, y, 1.f, false, (cudaStream_t)stream);
}

// @BE softmax_rows_f16
void softmax_rows_f16(const BE::Tensor x, BE::Tensor y, int64_t stream) {
    attn::launch<__half, false>(x, nullptr, y, 1.f, false, (cudaStream_t)stream);
}

// @BE log_softmax_rows_f32
static void log_softmax_rows_f32(const BE::Tensor x, BE::Tensor y, int64_t stream) {
    attn::launch<float, true>(x, nullptr, y, 1.f, false, (cudaStream_t)stream);
}

// @BE softmax_temperature_f32 arg ret attr.temperature stream
void softmax_temperature_f32(const BE::Tensor x, BE::Tensor y,
                             float temperature, int64_t stream) {
    attn::launch<float, false>(x, nullptr, y, temperature, false, (cudaStream_t)stream);
}

// Attention-style: boolean mask plus optional causal structure.
// @BE masked_softmax_f32
void masked_softmax_f32(const BE::Tensor scores,
                        const BE::Tensor mask,
                        BE::Tensor probs,
                        float temperature,
                        bool causal,
                        int64_t stream) {
    BE_CHECK(mask.numel() == scores.numel()) << "masked_softmax: mask shape mismatch";
    attn::launch<float, false>(scores, mask.data_ptr<bool>(), probs, temperature, causal,
                               (cudaStream_t)stream);
}

// @BE masked_softmax_f16 arg arg ret attr.temperature:float32 attr.causal:bool stream
void masked_softmax_f16(const BE::Tensor scores, const BE::Tensor mask, BE::Tensor probs,
                        float temperature, bool causal, int64_t stream) {
    attn::launch<__half, false>(scores, mask.data_ptr<bool>(), probs, temperature, causal,
                                (cudaStream_t)stream);
}
