// dense_event_decls.cu -- event-driven dense mat-vec with a header-style API.
//
// The public entry points are declared (and annotated) at the top, the way a
// header would list them, and defined at the bottom of the file after the
// kernels they use.  Two more are declared first and annotated at their
// definition.

#include <cuda_runtime.h>
#include <cstdint>
#include "brainevent/common.h"

// ---- public API -------------------------------------------------------------

// out[j] = sum_{i : spikes[i]} W[i, j]
// @BE dense_event_matvec_f32
void dense_event_matvec_f32(const BE::Tensor weights, const BE::Tensor spikes,
                            BE::Tensor out, int64_t stream);

// out[i] = sum_{j : spikes[j]} W[i, j]
// @BE dense_event_matvec_t_f32
void dense_event_matvec_t_f32(const BE::Tensor weights, const BE::Tensor spikes,
                              BE::Tensor out, int64_t stream);

// Same, with float-valued events (only non-zero entries contribute).
// @BE dense_float_event_matvec_f32
void dense_float_event_matvec_f32(const BE::Tensor weights, const BE::Tensor events,
                                  BE::Tensor out, float threshold, int64_t stream);

// Declared here, annotated at the definition below.
void dense_event_matvec_f64(const BE::Tensor weights, const BE::Tensor spikes,
                            BE::Tensor out, int64_t stream);
void dense_event_outer_f32(const BE::Tensor pre, const BE::Tensor post,
                           BE::Tensor dw, float lr, int64_t stream);

// ---- kernels --------------------------------------------------------------------

template <typename T, typename E>
__global__ void event_rows_kernel(const T* __restrict__ w, const E* __restrict__ ev,
                                  T* __restrict__ out, int32_t n_pre, int32_t n_post,
                                  float threshold) {
    const int32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_post) return;
    T acc = T(0);
    for (int32_t i = 0; i < n_pre; ++i) {
        if (static_cast<float>(ev[i]) > threshold) acc += w[(int64_t)i * n_post + j];
    }
    out[j] = acc;
}

template <typename T>
__global__ void event_cols_kernel(const T* __restrict__ w, const bool* __restrict__ ev,
                                  T* __restrict__ out, int32_t n_rows, int32_t n_cols) {
    const int32_t i = blockIdx.x;
    if (i >= n_rows) return;
    T acc = T(0);
    for (int32_t j = threadIdx.x; j < n_cols; j += blockDim.x)
        if (ev[j]) acc += w[(int64_t)i * n_cols + j];
    atomicAdd(&out[i], acc);
}

__global__ void outer_kernel(const bool* pre, const bool* post, float* dw, int32_t n_pre,
                             int32_t n_post, float lr) {
    const int32_t i = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n_pre && j < n_post) dw[(int64_t)i * n_post + j] = (pre[i] && post[j]) ? lr : 0.f;
}

// ---- definitions ------------------------------------------------------------

void dense_event_matvec_f32(const BE::Tensor weights, const BE::Tensor spikes,
                            BE::Tensor out, int64_t stream) {
    const int32_t n_pre = (int32_t)weights.size(0), n_post = (int32_t)weights.size(1);
    BE_CHECK(spikes.numel() == n_pre) << "dense_event_matvec_f32: spikes length";
    event_rows_kernel<float, bool><<<(n_post + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        weights.data_ptr<float>(), spikes.data_ptr<bool>(), out.data_ptr<float>(), n_pre,
        n_post, 0.5f);
    BE_CHECK_KERNEL_LAUNCH();
}

void dense_event_matvec_t_f32(const BE::Tensor weights, const BE::Tensor spikes,
                              BE::Tensor out, int64_t stream) {
    const int32_t n_rows = (int32_t)weights.size(0), n_cols = (int32_t)weights.size(1);
    cudaStream_t s = (cudaStream_t)stream;
    BE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), s));
    event_cols_kernel<float><<<n_rows, 256, 0, s>>>(weights.data_ptr<float>(),
                                                    spikes.data_ptr<bool>(),
                                                    out.data_ptr<float>(), n_rows, n_cols);
    BE_CHECK_KERNEL_LAUNCH();
}

void dense_float_event_matvec_f32(const BE::Tensor weights, const BE::Tensor events,
                                  BE::Tensor out, float threshold, int64_t stream) {
    const int32_t n_pre = (int32_t)weights.size(0), n_post = (int32_t)weights.size(1);
    event_rows_kernel<float, float><<<(n_post + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        weights.data_ptr<float>(), events.data_ptr<float>(), out.data_ptr<float>(), n_pre,
        n_post, threshold);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE dense_event_matvec_f64
void dense_event_matvec_f64(const BE::Tensor weights, const BE::Tensor spikes,
                            BE::Tensor out, int64_t stream) {
    const int32_t n_pre = (int32_t)weights.size(0), n_post = (int32_t)weights.size(1);
    event_rows_kernel<double, bool><<<(n_post + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        weights.data_ptr<double>(), spikes.data_ptr<bool>(), out.data_ptr<double>(), n_pre,
        n_post, 0.5f);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE dense_event_outer_f32 arg arg ret attr.lr:float32 stream
void dense_event_outer_f32(const BE::Tensor pre, const BE::Tensor post,
                           BE::Tensor dw, float lr, int64_t stream) {
    const int32_t n_pre = (int32_t)pre.numel(), n_post = (int32_t)post.numel();
    dim3 grid((n_post + 127) / 128, n_pre);
    outer_kernel<<<grid, 128, 0, (cudaStream_t)stream>>>(pre.data_ptr<bool>(),
                                                         post.data_ptr<bool>(),
                                                         dw.data_ptr<float>(), n_pre,
                                                         n_post, lr);
    BE_CHECK_KERNEL_LAUNCH();
}
