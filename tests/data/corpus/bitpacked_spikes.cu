// bitpacked_spikes.cu -- pack spike vectors into machine words and back.
//
// BE_DEFINE_BITPACK(SPIKE, WORD, SPIKE_T, WORD_T) -> bitpack_<SPIKE>_<WORD>
// takes a word-sized `lane_mask` attribute (uint32 or uint64) that selects the
// neurons to keep; `bitunpack_*` reverses the packing.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <climits>
#include "brainevent/common.h"

template <typename S> __device__ __forceinline__ bool on(S s) { return s != S(0); }
template <> __device__ __forceinline__ bool on<bool>(bool s) { return s; }
template <> __device__ __forceinline__ bool on<__half>(__half s) { return __half2float(s) != 0.f; }

// One thread per output word.
template <typename S, typename W>
__global__ void bitpack_kernel(const S* __restrict__ spikes, W* __restrict__ packed,
                               int64_t n, int64_t n_words, W lane_mask) {
    constexpr int BITS = sizeof(W) * CHAR_BIT;
    const int64_t w = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (w >= n_words) return;
    W word = 0;
#pragma unroll 8
    for (int b = 0; b < BITS; ++b) {
        const int64_t i = w * BITS + b;
        if (i < n && on(spikes[i])) word |= (W(1) << b);
    }
    packed[w] = word & lane_mask;
}

template <typename W>
__global__ void bitunpack_kernel(const W* __restrict__ packed, float* __restrict__ out,
                                 int64_t n, float on_value) {
    constexpr int BITS = sizeof(W) * CHAR_BIT;
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = ((packed[i / BITS] >> (i % BITS)) & W(1)) ? on_value : 0.f;
}

#define BE_DEFINE_BITPACK(SPIKE, WORD, SPIKE_T, WORD_T)                          \
    void bitpack_##SPIKE##_##WORD(const BE::Tensor spikes,                       \
                                  BE::Tensor packed,                             \
                                  WORD_T lane_mask,                              \
                                  int64_t stream) {                              \
        const int64_t n = spikes.numel(), n_words = packed.numel();              \
        BE_CHECK(n_words * (int64_t)sizeof(WORD_T) * CHAR_BIT >= n)              \
            << "bitpack: packed buffer too small for " << n << " neurons";       \
        bitpack_kernel<SPIKE_T, WORD_T>                                          \
            <<<(unsigned)((n_words + 127) / 128), 128, 0, (cudaStream_t)stream>>>( \
                spikes.data_ptr<SPIKE_T>(), packed.data_ptr<WORD_T>(), n,        \
                n_words, lane_mask);                                             \
        BE_CHECK_KERNEL_LAUNCH();                                                \
    }

// @BE bitpack_bool_u32
BE_DEFINE_BITPACK(bool, u32, bool, uint32_t)
// @BE bitpack_bool_u64
BE_DEFINE_BITPACK(bool, u64, bool, uint64_t)
// @BE bitpack_u8_u32
BE_DEFINE_BITPACK(u8, u32, uint8_t, uint32_t)
// @BE bitpack_u8_u64
BE_DEFINE_BITPACK(u8, u64, uint8_t, uint64_t)
// @BE bitpack_f32_u32
BE_DEFINE_BITPACK(f32, u32, float, uint32_t)
// @BE bitpack_f32_u64
BE_DEFINE_BITPACK(f32, u64, float, unsigned long long)
// @BE bitpack_f16_u32
BE_DEFINE_BITPACK(f16, u32, __half, unsigned int)
// @BE bitpack_f16_u64
BE_DEFINE_BITPACK(f16, u64, __half, uint64_t)

// @BE bitunpack_u32
void bitunpack_u32(const BE::Tensor packed, BE::Tensor out, float on_value, int64_t stream) {
    const int64_t n = out.numel();
    bitunpack_kernel<uint32_t><<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        packed.data_ptr<uint32_t>(), out.data_ptr<float>(), n, on_value);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE bitunpack_u64 arg ret attr.on_value:float32 stream
void bitunpack_u64(const BE::Tensor packed, BE::Tensor out, float on_value, int64_t stream) {
    const int64_t n = out.numel();
    bitunpack_kernel<uint64_t><<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        packed.data_ptr<uint64_t>(), out.data_ptr<float>(), n, on_value);
    BE_CHECK_KERNEL_LAUNCH();
}
