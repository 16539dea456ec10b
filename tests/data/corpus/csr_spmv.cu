// csr_spmv.cu -- y = alpha * A @ x for a CSR matrix A, hand-written per dtype.
//
// The half-precision variants receive alpha as raw 16-bit patterns
// (float16 / bfloat16 attributes arrive as uint16_t), so their arg_spec is
// written out; the float/double variants are inferred from the signature.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstring>
#include "brainevent/common.h"

namespace sparse {
namespace kernels {

// One warp per row; vector CSR ("CSR-vector") algorithm.
template <typename T, typename ACC>
__global__ void csr_vector(const T* __restrict__ data,
                           const int32_t* __restrict__ indices,
                           const int32_t* __restrict__ indptr,
                           const T* __restrict__ x,
                           T* __restrict__ y,
                           int32_t n_rows, ACC alpha) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp >= n_rows) return;
    ACC sum = ACC(0);
    for (int k = indptr[warp] + lane; k < indptr[warp + 1]; k += 32) {
        sum += static_cast<ACC>(data[k]) * static_cast<ACC>(x[indices[k]]);
    }
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) y[warp] = static_cast<T>(alpha * sum);
}

template <typename T>
__global__ void csr_transpose_scatter(const T* __restrict__ data,
                                      const int32_t* __restrict__ indices,
                                      const int32_t* __restrict__ indptr,
                                      const T* __restrict__ x,
                                      T* __restrict__ y, int32_t n_rows, T alpha) {
    const int row = blockIdx.x;
    if (row >= n_rows) return;
    const T xr = alpha * x[row];
    for (int k = indptr[row] + threadIdx.x; k < indptr[row + 1]; k += blockDim.x) {
        atomicAdd(&y[indices[k]], data[k] * xr);
    }
}

}  // namespace kernels

template <typename T, typename ACC>
void launch_csr_vector(const BE::Tensor& data, const BE::Tensor& indices,
                       const BE::Tensor& indptr, const BE::Tensor& x,
                       BE::Tensor& y, ACC alpha, cudaStream_t s) {
    const int32_t n_rows = static_cast<int32_t>(indptr.numel() - 1);
    BE_CHECK(y.numel() == n_rows) << "csr_spmv: y has " << y.numel()
                                  << " elements, expected " << n_rows;
    const int threads = 256;
    const int blocks = (n_rows * 32 + threads - 1) / threads;
    kernels::csr_vector<T, ACC><<<blocks, threads, 0, s>>>(
        data.data_ptr<T>(), indices.data_ptr<int32_t>(), indptr.data_ptr<int32_t>(),
        x.data_ptr<T>(), y.data_ptr<T>(), n_rows, alpha);
    BE_CHECK_KERNEL_LAUNCH();
}

}  // namespace sparse

static float half_bits_to_float(uint16_t bits) {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
}

static float bf16_bits_to_float(uint16_t bits) {
    uint32_t word = static_cast<uint32_t>(bits) << 16;
    float out;
    std::memcpy(&out, &word, sizeof(out));
    return out;
}

// @BE csr_spmv_f32
void csr_spmv_f32(const BE::Tensor data, const BE::Tensor indices,
                  const BE::Tensor indptr, const BE::Tensor x,
                  BE::Tensor y, float alpha, int64_t stream) {
    sparse::launch_csr_vector<float, float>(data, indices, indptr, x, y, alpha,
                                            (cudaStream_t)stream);
}

// @BE csr_spmv_f64
void csr_spmv_f64(const BE::Tensor data, const BE::Tensor indices,
                  const BE::Tensor indptr, const BE::Tensor x,
                  BE::Tensor y, double alpha, int64_t stream) {
    sparse::launch_csr_vector<double, double>(data, indices, indptr, x, y, alpha,
                                              (cudaStream_t)stream);
}

// @BE csr_spmv_f16 arg arg arg arg ret attr.alpha:float16 stream
void csr_spmv_f16(const BE::Tensor data, const BE::Tensor indices,
                  const BE::Tensor indptr, const BE::Tensor x,
                  BE::Tensor y, uint16_t alpha, int64_t stream) {
    sparse::launch_csr_vector<__half, float>(data, indices, indptr, x, y,
                                             half_bits_to_float(alpha),
                                             (cudaStream_t)stream);
}

// @BE csr_spmv_bf16 arg arg arg arg ret attr.alpha:bfloat16 stream
void csr_spmv_bf16(const BE::Tensor data, const BE::Tensor indices,
                   const BE::Tensor indptr, const BE::Tensor x,
                   BE::Tensor y, uint16_t alpha, int64_t stream) {
    sparse::launch_csr_vector<__nv_bfloat16, float>(data, indices, indptr, x, y,
                                                    bf16_bits_to_float(alpha),
                                                    (cudaStream_t)stream);
}

// y = alpha * A^T @ x
// @BE csr_spmv_t_f32
void csr_spmv_t_f32(const BE::Tensor data, const BE::Tensor indices,
                    const BE::Tensor indptr, const BE::Tensor x,
                    BE::Tensor y, float alpha, int64_t stream) {
    cudaStream_t s = (cudaStream_t)stream;
    const int32_t n_rows = static_cast<int32_t>(indptr.numel() - 1);
    BE_CUDA_CHECK(cudaMemsetAsync(y.data_ptr(), 0, y.nbytes(), s));
    sparse::kernels::csr_transpose_scatter<float><<<n_rows, 128, 0, s>>>(
        data.data_ptr<float>(), indices.data_ptr<int32_t>(),
        indptr.data_ptr<int32_t>(), x.data_ptr<float>(), y.data_ptr<float>(),
        n_rows, alpha);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE csr_spmv_t_f64
void csr_spmv_t_f64(const BE::Tensor data, const BE::Tensor indices,
                    const BE::Tensor indptr, const BE::Tensor x,
                    BE::Tensor y, double alpha, int64_t stream) {
    cudaStream_t s = (cudaStream_t)stream;
    const int32_t n_rows = static_cast<int32_t>(indptr.numel() - 1);
    BE_CUDA_CHECK(cudaMemsetAsync(y.data_ptr(), 0, y.nbytes(), s));
    sparse::kernels::csr_transpose_scatter<double><<<n_rows, 128, 0, s>>>(
        data.data_ptr<double>(), indices.data_ptr<int32_t>(),
        indptr.data_ptr<int32_t>(), x.data_ptr<double>(), y.data_ptr<double>(),
        n_rows, alpha);
    BE_CHECK_KERNEL_LAUNCH();
}
