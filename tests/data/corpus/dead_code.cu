// dead_code.cu -- spike counting kernels with a long history.
//
// Older versions of the entry points are kept around for reference inside
// comments, strings and disabled preprocessor blocks.  None of those are
// exports; only the live annotations below are.

#include <cuda_runtime.h>
#include <cstdint>
#include "brainevent/common.h"

static const char* kUsage =
    "annotate entry points like this: // @BE spike_count_legacy arg ret stream";
static const char* kOpen = "/*";   // a string holding a comment opener
static const char kQuote = '"';    // a char literal holding a quote

__global__ void count_kernel(const bool* __restrict__ spikes, int32_t* __restrict__ count,
                             int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n && spikes[i]) atomicAdd(count, 1);
}

/*
 * Version 1 of the API took the size as an attribute:
 *
 * // @BE spike_count_v0 arg ret attr.n:int64 stream
 * void spike_count_v0(const BE::Tensor spikes, BE::Tensor count, int64_t n,
 *                     int64_t stream);
 */

/* // @BE spike_count_inline_comment arg ret stream */

#if 0
// @BE spike_count_v1
void spike_count_v1(const BE::Tensor spikes, BE::Tensor count, int64_t stream) {
#ifdef BE_USE_CUB
    cub_count(spikes, count, stream);
#endif
    // @BE spike_count_v1_helper
    count_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(nullptr, nullptr, 0);
}
#endif

#if 0  // disabled: the warp-aggregated atomics were slower on sm_90
// @BE spike_count_warp_aggregated arg ret stream
void spike_count_warp_aggregated(const BE::Tensor spikes, BE::Tensor count,
                                 int64_t stream);
#else
// @BE spike_count arg ret stream
void spike_count(const BE::Tensor spikes, BE::Tensor count, int64_t stream) {
    cudaStream_t s = (cudaStream_t)stream;
    BE_CUDA_CHECK(cudaMemsetAsync(count.data_ptr(), 0, sizeof(int32_t), s));
    const int64_t n = spikes.numel();
    count_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(
        spikes.data_ptr<bool>(), count.data_ptr<int32_t>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}
#endif

// A line comment mentioning /* does not open a block comment.
// @BE spike_rate
void spike_rate(const BE::Tensor spikes, BE::Tensor rate, float window_ms, int64_t stream) {
    (void)kUsage; (void)kOpen; (void)kQuote;
    cudaStream_t s = (cudaStream_t)stream;
    BE_CHECK(window_ms > 0.f) << "spike_rate: window must be positive";
    BE_CUDA_CHECK(cudaMemsetAsync(rate.data_ptr(), 0, rate.nbytes(), s));
    const int64_t n = spikes.numel();
    count_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(
        spikes.data_ptr<bool>(), rate.data_ptr<int32_t>(), n);
    BE_CHECK_KERNEL_LAUNCH();
}

#if 0
#if 1
// @BE spike_count_nested_dead arg ret stream
#endif
// @BE spike_count_still_dead arg ret stream
#endif

const char* spike_count_doc() {
    return "\"// @BE spike_count_escaped arg ret stream\" is how it is spelled";
}

// @BE spike_count_per_row arg ret attr.n_cols:int32 stream
void spike_count_per_row(const BE::Tensor spikes, BE::Tensor counts, int32_t n_cols,
                         int64_t stream) {
    const int64_t rows = spikes.numel() / n_cols;
    cudaStream_t s = (cudaStream_t)stream;
    BE_CUDA_CHECK(cudaMemsetAsync(counts.data_ptr(), 0, counts.nbytes(), s));
    for (int64_t r = 0; r < rows; ++r) {
        count_kernel<<<(unsigned)((n_cols + 255) / 256), 256, 0, s>>>(
            spikes.data_ptr<bool>() + r * n_cols, counts.data_ptr<int32_t>() + r, n_cols);
    }
    BE_CHECK_KERNEL_LAUNCH();
}
