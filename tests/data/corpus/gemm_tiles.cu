// gemm_tiles.cu -- small tiled dense matmuls (readout layers, surrogate
// gradients) where pulling in cuBLAS is not worth it.

#include <cuda_runtime.h>
#include <cstdint>
#include <type_traits>
#include "brainevent/common.h"

template <typename T, int TILE>
__global__ void gemm_tiled(const T* __restrict__ A, const T* __restrict__ B,
                           T* __restrict__ C, int M, int N, int K, bool trans_b) {
    __shared__ T As[TILE][TILE];
    __shared__ T Bs[TILE][TILE + 1];  // +1 avoids bank conflicts
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    T acc = T(0);
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        const int ka = t * TILE + threadIdx.x, kb = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : T(0);
        T bv = T(0);
        if (kb < K && col < N) bv = trans_b ? B[col * K + kb] : B[kb * N + col];
        Bs[threadIdx.y][threadIdx.x] = bv;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

__global__ void bias_act(float* C, const float* bias, int M, int N, bool relu) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M * N) return;
    float v = C[i] + bias[i % N];
    C[i] = (relu && v < 0.f) ? 0.f : v;
}

__global__ void gemm_s8(const int8_t* A, const int8_t* B, int32_t* C, int M, int N, int K,
                        int32_t a_zero, int32_t b_zero) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    int32_t acc = 0;
    for (int k = 0; k < K; ++k)
        acc += (int32_t(A[row * K + k]) - a_zero) * (int32_t(B[k * N + col]) - b_zero);
    C[row * N + col] = acc;
}

template <typename T, int TILE = 16>
void launch_gemm(const BE::Tensor& a, const BE::Tensor& b, BE::Tensor& c, bool trans_b,
                 cudaStream_t s) {
    const int M = (int)a.size(a.ndim() - 2), K = (int)a.size(a.ndim() - 1);
    const int N = (int)(trans_b ? b.size(b.ndim() - 2) : b.size(b.ndim() - 1));
    const int64_t batch = a.numel() / ((int64_t)M * K);
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    for (int64_t i = 0; i < batch; ++i) {
        gemm_tiled<T, TILE><<<grid, block, 0, s>>>(
            a.data_ptr<T>() + i * M * K, b.data_ptr<T>() + (b.ndim() > 2 ? i * K * N : 0),
            c.data_ptr<T>() + i * M * N, M, N, K, trans_b);
    }
    BE_CHECK_KERNEL_LAUNCH();
}

// Explicit instantiations used by the tests of this library.
template void launch_gemm<float, 16>(const BE::Tensor&, const BE::Tensor&, BE::Tensor&, bool,
                                     cudaStream_t);
template void launch_gemm<double, 8>(const BE::Tensor&, const BE::Tensor&, BE::Tensor&, bool,
                                     cudaStream_t);

// dtype-generic: float32 or float64, chosen at run time.
// @BE gemm
void gemm(const BE::Tensor a, const BE::Tensor b, BE::Tensor c, int64_t stream) {
    BE_CHECK(a.dtype() == b.dtype()) << "gemm: operand dtypes differ";
    BE_DISPATCH_FLOATING(a.dtype(), scalar_t, {
        if constexpr (std::is_same<scalar_t, float>::value || std::is_same<scalar_t, double>::value) {
            launch_gemm<scalar_t>(a, b, c, false, (cudaStream_t)stream);
        } else {
            BE_CHECK(false) << "gemm: half precision is not supported";
        }
    });
}

// @BE batched_gemm_f32
void batched_gemm_f32(const BE::Tensor a, const BE::Tensor b, BE::Tensor c,
                      bool transpose_b, int64_t stream) {
    BE_CHECK(a.ndim() == 3) << "batched_gemm_f32: a must be [B, M, K]";
    launch_gemm<float, 16>(a, b, c, transpose_b, (cudaStream_t)stream);
}

// @BE gemm_bias_act_f32
void gemm_bias_act_f32(const BE::Tensor a, const BE::Tensor b, const BE::Tensor bias,
                       BE::Tensor c, bool relu, int64_t stream) {
    launch_gemm<float, 16>(a, b, c, false, (cudaStream_t)stream);
    const int M = (int)a.size(0), N = (int)b.size(1);
    bias_act<<<(M * N + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        c.data_ptr<float>(), bias.data_ptr<float>(), M, N, relu);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE gemm_s8s8s32
void gemm_s8s8s32(const BE::Tensor a, const BE::Tensor b, BE::Tensor c,
                  int32_t a_zero, int32_t b_zero, int64_t stream) {
    const int M = (int)a.size(0), K = (int)a.size(1), N = (int)b.size(1);
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_s8<<<grid, block, 0, (cudaStream_t)stream>>>(a.data_ptr<int8_t>(), b.data_ptr<int8_t>(),
                                                      c.data_ptr<int32_t>(), M, N, K, a_zero,
                                                      b_zero);
    BE_CHECK_KERNEL_LAUNCH();
}
