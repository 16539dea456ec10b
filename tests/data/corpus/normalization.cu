// normalization.cu -- LayerNorm / RMSNorm forward and backward.
//
// Forward passes also return the per-row statistics (mean, rstd) so the
// backward pass does not recompute them.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>
#include "brainevent/common.h"

namespace lnorm {

constexpr int kWarp = 32;

template <typename T> __device__ __forceinline__ float f32(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float f32<__half>(__half v) { return __half2float(v); }

__device__ __forceinline__ float warp_allreduce(float v) {
    for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// One warp per row (rows are short: hidden sizes up to a few thousand).
template <typename T, bool RMS>
__global__ void forward(const T* __restrict__ x, const T* __restrict__ gamma,
                        const T* __restrict__ beta, T* __restrict__ y,
                        float* __restrict__ mean_out, float* __restrict__ rstd_out,
                        int64_t rows, int64_t cols, float eps) {
    const int64_t r = blockIdx.x * (int64_t)(blockDim.x / kWarp) + threadIdx.x / kWarp;
    const int lane = threadIdx.x % kWarp;
    if (r >= rows) return;
    const T* xr = x + r * cols;
    float s = 0.f, s2 = 0.f;
    for (int64_t c = lane; c < cols; c += kWarp) {
        const float v = f32(xr[c]);
        s += v;
        s2 += v * v;
    }
    s = warp_allreduce(s);
    s2 = warp_allreduce(s2);
    const float mean = RMS ? 0.f : s / cols;
    const float var = s2 / cols - mean * mean;
    const float rstd = rsqrtf(var + eps);
    for (int64_t c = lane; c < cols; c += kWarp) {
        float v = (f32(xr[c]) - mean) * rstd * f32(gamma[c]);
        if (!RMS) v += f32(beta[c]);
        y[r * cols + c] = static_cast<T>(v);
    }
    if (lane == 0) {
        if (mean_out) mean_out[r] = mean;
        rstd_out[r] = rstd;
    }
}

template <typename T>
__global__ void backward_dx(const T* __restrict__ dy, const T* __restrict__ x,
                            const T* __restrict__ gamma, const float* __restrict__ mean,
                            const float* __restrict__ rstd, T* __restrict__ dx,
                            int64_t rows, int64_t cols) {
    const int64_t r = blockIdx.x * (int64_t)(blockDim.x / kWarp) + threadIdx.x / kWarp;
    const int lane = threadIdx.x % kWarp;
    if (r >= rows) return;
    float a = 0.f, b = 0.f;
    for (int64_t c = lane; c < cols; c += kWarp) {
        const float xh = (f32(x[r * cols + c]) - mean[r]) * rstd[r];
        const float g = f32(dy[r * cols + c]) * f32(gamma[c]);
        a += g;
        b += g * xh;
    }
    a = warp_allreduce(a) / cols;
    b = warp_allreduce(b) / cols;
    for (int64_t c = lane; c < cols; c += kWarp) {
        const float xh = (f32(x[r * cols + c]) - mean[r]) * rstd[r];
        const float g = f32(dy[r * cols + c]) * f32(gamma[c]);
        dx[r * cols + c] = static_cast<T>(rstd[r] * (g - a - xh * b));
    }
}

inline unsigned blocks(int64_t rows) { return static_cast<unsigned>((rows + 3) / 4); }

}  // namespace lnorm

// @BE layer_norm_fwd_f32
void layer_norm_fwd_f32(const BE::Tensor x, const BE::Tensor gamma, const BE::Tensor beta,
                        BE::Tensor y, BE::Tensor mean, BE::Tensor rstd,
                        float eps, int64_t stream) {
    const int64_t rows = x.size(0), cols = x.size(1);
    lnorm::forward<float, false><<<lnorm::blocks(rows), 128, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(),
        y.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(), rows, cols, eps);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE layer_norm_fwd_f16
void layer_norm_fwd_f16(const BE::Tensor x, const BE::Tensor gamma, const BE::Tensor beta,
                        BE::Tensor y, BE::Tensor mean, BE::Tensor rstd,
                        float eps, int64_t stream) {
    const int64_t rows = x.size(0), cols = x.size(1);
    lnorm::forward<__half, false><<<lnorm::blocks(rows), 128, 0, (cudaStream_t)stream>>>(
        x.data_ptr<__half>(), gamma.data_ptr<__half>(), beta.data_ptr<__half>(),
        y.data_ptr<__half>(), mean.data_ptr<float>(), rstd.data_ptr<float>(), rows, cols, eps);
    BE_CHECK_KERNEL_LAUNCH();
}

// RMSNorm has no beta and no mean output.
// @BE rms_norm_fwd_f32 arg arg ret ret attr.eps:float32 stream
void rms_norm_fwd_f32(const BE::Tensor x, const BE::Tensor gamma, BE::Tensor y,
                      BE::Tensor rstd, float eps, int64_t stream) {
    const int64_t rows = x.size(0), cols = x.size(1);
    lnorm::forward<float, true><<<lnorm::blocks(rows), 128, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), gamma.data_ptr<float>(), nullptr, y.data_ptr<float>(), nullptr,
        rstd.data_ptr<float>(), rows, cols, eps);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE layer_norm_bwd_dx_f32
void layer_norm_bwd_dx_f32(const BE::Tensor dy, const BE::Tensor x, const BE::Tensor gamma,
                           const BE::Tensor mean, const BE::Tensor rstd, BE::Tensor dx,
                           int64_t stream) {
    const int64_t rows = x.size(0), cols = x.size(1);
    lnorm::backward_dx<float><<<lnorm::blocks(rows), 128, 0, (cudaStream_t)stream>>>(
        dy.data_ptr<float>(), x.data_ptr<float>(), gamma.data_ptr<float>(),
        mean.data_ptr<float>(), rstd.data_ptr<float>(), dx.data_ptr<float>(), rows, cols);
    BE_CHECK_KERNEL_LAUNCH();
}
