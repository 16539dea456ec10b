// jitc_templates.cu -- just-in-time connectivity (JITC) mat-vec products.
//
// The connection matrix is never stored: entry (i, j) exists with
// probability `prob`, decided by a counter-based hash of (seed, i, j), and its
// weight is either a constant or drawn from a uniform / normal distribution.
// Kernels are templates inside namespaces; the exported launchers are plain
// (some static or inline) functions at global scope.

#include <cuda_runtime.h>
#include <cstdint>
#include <type_traits>
#include "brainevent/common.h"

namespace brainevent {
namespace jitc {

__device__ __forceinline__ uint32_t hash3(uint32_t seed, uint32_t i, uint32_t j) {
    uint32_t h = seed ^ 0x9e3779b9u;
    h ^= i + 0x7f4a7c15u + (h << 6) + (h >> 2);
    h ^= j + 0x165667b1u + (h << 6) + (h >> 2);
    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
    return h;
}

__device__ __forceinline__ float u01(uint32_t h) { return (h >> 8) * (1.0f / 16777216.0f); }

struct HomoWeight {
    float w;
    __device__ float operator()(uint32_t) const { return w; }
};
struct UniformWeight {
    float lo, hi;
    __device__ float operator()(uint32_t h) const { return lo + (hi - lo) * u01(h * 747796405u); }
};
template <typename T>
struct NormalWeight {
    T mu, sigma;
    __device__ T operator()(uint32_t h) const {
        // Box-Muller on two derived uniforms.
        const T a = T(u01(h * 2891336453u)) + T(1e-7), b = T(u01(h * 1181783497u));
        return mu + sigma * sqrt(T(-2) * log(a)) * cospi(T(2) * b);
    }
};

template <typename T, typename WeightFn>
__global__ void matvec_kernel(const T* __restrict__ vec, T* __restrict__ out,
                              int32_t n_rows, int32_t n_cols, float prob, uint32_t seed,
                              WeightFn weight) {
    const int32_t row = blockIdx.x;
    if (row >= n_rows) return;
    T acc = T(0);
    for (int32_t col = threadIdx.x; col < n_cols; col += blockDim.x) {
        const uint32_t h = hash3(seed, row, col);
        if (u01(h) < prob) acc += static_cast<T>(weight(h)) * vec[col];
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    __shared__ T part[32];
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        T s = T(0);
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += part[w];
        out[row] = s;
    }
}

template <typename T, typename WeightFn>
void launch(const BE::Tensor& vec, BE::Tensor& out, float prob, uint32_t seed,
            WeightFn fn, cudaStream_t s) {
    static_assert(std::is_floating_point<T>::value, "jitc: floating point only");
    BE_CHECK(prob >= 0.f && prob <= 1.f) << "jitc: prob must lie in [0, 1]";
    const int32_t n_rows = static_cast<int32_t>(out.numel());
    const int32_t n_cols = static_cast<int32_t>(vec.numel());
    matvec_kernel<T, WeightFn><<<n_rows, 256, 0, s>>>(vec.data_ptr<T>(), out.data_ptr<T>(),
                                                      n_rows, n_cols, prob, seed, fn);
    BE_CHECK_KERNEL_LAUNCH();
}

}  // namespace jitc
}  // namespace brainevent

namespace bej = brainevent::jitc;

// Helper with a similar name and a tensor signature; not exported.
template <typename T>
void jitc_homo_matvec_impl(const BE::Tensor weight, const BE::Tensor vector, BE::Tensor out,
                           float prob, uint32_t seed, int64_t stream) {
    float w = 1.f;
    BE_CUDA_CHECK(cudaMemcpyAsync(&w, weight.data_ptr(), sizeof(float),
                                  cudaMemcpyDeviceToHost, (cudaStream_t)stream));
    BE_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    bej::launch<T>(vector, out, prob, seed, bej::HomoWeight{w}, (cudaStream_t)stream);
}

// @BE jitc_homo_matvec_f32
void jitc_homo_matvec_f32(const BE::Tensor weight, const BE::Tensor vector, BE::Tensor out,
                          float prob, uint32_t seed, int64_t stream) {
    jitc_homo_matvec_impl<float>(weight, vector, out, prob, seed, stream);
}

// @BE jitc_homo_matvec_f64
inline void jitc_homo_matvec_f64(const BE::Tensor weight, const BE::Tensor vector,
                                 BE::Tensor out, float prob, uint32_t seed, int64_t stream) {
    jitc_homo_matvec_impl<double>(weight, vector, out, prob, seed, stream);
}

// @BE jitc_uniform_matvec_f32
static void jitc_uniform_matvec_f32(const BE::Tensor vector, BE::Tensor out,
                                    float w_low, float w_high, float prob,
                                    unsigned int seed, int64_t stream) {
    BE_CHECK(w_low <= w_high) << "jitc_uniform_matvec_f32: w_low > w_high";
    bej::launch<float>(vector, out, prob, seed, bej::UniformWeight{w_low, w_high},
                       (cudaStream_t)stream);
}

// @BE jitc_normal_matvec_f32
static inline void jitc_normal_matvec_f32(const BE::Tensor vector, BE::Tensor out,
                                          float w_mu, float w_sigma, float prob,
                                          uint32_t seed, int64_t stream) {
    bej::launch<float>(vector, out, prob, seed, bej::NormalWeight<float>{w_mu, w_sigma},
                       (cudaStream_t)stream);
}

// @BE jitc_normal_matvec_f64
void jitc_normal_matvec_f64(const BE::Tensor vector, BE::Tensor out,
                            double w_mu, double w_sigma, float prob,
                            uint32_t seed, int64_t stream) {
    bej::launch<double>(vector, out, prob, seed, bej::NormalWeight<double>{w_mu, w_sigma},
                        (cudaStream_t)stream);
}
