// csr_matvec_algos.cu -- three CSR SpMV algorithms x three dtypes.
//
//   csrmv_scalar_*   one thread per row (short rows)
//   csrmv_vector_*   one warp per row   (medium rows)
//   csrmv_merge_*    row-split by blocks (long, skewed rows)
//
// The names are pasted on both sides: csrmv_##ALGO##_##SUFFIX.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>
#include "brainevent/common.h"

template <typename T> __device__ __forceinline__ float ldf(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float ldf<__half>(__half v) { return __half2float(v); }
__device__ __forceinline__ double ldf(double v) { return v; }

template <typename T, typename S>
__global__ void scalar_kernel(const T* data, const int32_t* indices, const int32_t* indptr,
                              const T* vec, T* out, int32_t n_rows, S alpha) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    S acc = 0;
    for (int k = indptr[row]; k < indptr[row + 1]; ++k)
        acc += static_cast<S>(ldf(data[k])) * static_cast<S>(ldf(vec[indices[k]]));
    out[row] = static_cast<T>(alpha * acc);
}

template <typename T, typename S>
__global__ void vector_kernel(const T* data, const int32_t* indices, const int32_t* indptr,
                              const T* vec, T* out, int32_t n_rows, S alpha) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= n_rows) return;
    S acc = 0;
    for (int k = indptr[row] + lane; k < indptr[row + 1]; k += 32)
        acc += static_cast<S>(ldf(data[k])) * static_cast<S>(ldf(vec[indices[k]]));
    for (int o = 16; o; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (lane == 0) out[row] = static_cast<T>(alpha * acc);
}

template <typename T, typename S>
__global__ void merge_kernel(const T* data, const int32_t* indices, const int32_t* indptr,
                             const T* vec, T* out, int32_t n_rows, S alpha) {
    __shared__ S partial[256];
    int row = blockIdx.x;
    if (row >= n_rows) return;
    S acc = 0;
    for (int k = indptr[row] + threadIdx.x; k < indptr[row + 1]; k += blockDim.x)
        acc += static_cast<S>(ldf(data[k])) * static_cast<S>(ldf(vec[indices[k]]));
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[row] = static_cast<T>(alpha * partial[0]);
}

static inline dim3 grid_for(const char* algo, int32_t n_rows) {
    if (algo[0] == 's') return dim3((n_rows + 255) / 256);
    if (algo[0] == 'v') return dim3((n_rows * 32 + 255) / 256);
    return dim3(n_rows);
}

#define BE_DEFINE_CSRMV_ALGO(ALGO, SUFFIX, T, S)                                  \
    void csrmv_##ALGO##_##SUFFIX(const BE::Tensor data,                           \
                                 const BE::Tensor indices,                        \
                                 const BE::Tensor indptr,                         \
                                 const BE::Tensor vector,                         \
                                 BE::Tensor out,                                  \
                                 S alpha,                                         \
                                 int64_t stream) {                                \
        const int32_t n_rows = static_cast<int32_t>(indptr.numel() - 1);        \
        BE_CHECK(data.numel() == indices.numel())                                 \
            << "csrmv_" #ALGO ": data/indices length mismatch";                   \
        ALGO##_kernel<T, S><<<grid_for(#ALGO, n_rows), 256, 0,                    \
                              (cudaStream_t)stream>>>(                            \
            data.data_ptr<T>(), indices.data_ptr<int32_t>(),                      \
            indptr.data_ptr<int32_t>(), vector.data_ptr<T>(),                     \
            out.data_ptr<T>(), n_rows, alpha);                                    \
        BE_CHECK_KERNEL_LAUNCH();                                                 \
    }

template <typename T>
__global__ void diag_kernel(const T* data, const int32_t* indptr, const T* diag,
                            T* out, int32_t n_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n_rows) return;
    for (int k = indptr[row]; k < indptr[row + 1]; ++k) out[k] = data[k] * diag[row];
}

#define BE_DEFINE_CSR_DIAG_SCALE(SUFFIX, T)                                       \
    void csr_diag_scale##SUFFIX(const BE::Tensor data, const BE::Tensor indptr,   \
                                const BE::Tensor diag, BE::Tensor out,            \
                                int64_t stream) {                                 \
        const int32_t n_rows = static_cast<int32_t>(indptr.numel() - 1);        \
        diag_kernel<T><<<(n_rows + 127) / 128, 128, 0, (cudaStream_t)stream>>>(   \
            data.data_ptr<T>(), indptr.data_ptr<int32_t>(), diag.data_ptr<T>(),   \
            out.data_ptr<T>(), n_rows);                                           \
        BE_CHECK_KERNEL_LAUNCH();                                                 \
    }

// @BE csrmv_scalar_f32
BE_DEFINE_CSRMV_ALGO(scalar, f32, float, float)
// @BE csrmv_scalar_f64
BE_DEFINE_CSRMV_ALGO(scalar, f64, double, double)
// @BE csrmv_scalar_f16
BE_DEFINE_CSRMV_ALGO(scalar, f16, __half, float)

// @BE csrmv_vector_f32
BE_DEFINE_CSRMV_ALGO(vector, f32, float, float);
// @BE csrmv_vector_f64
BE_DEFINE_CSRMV_ALGO(vector, f64, double, double);
// @BE csrmv_vector_f16
BE_DEFINE_CSRMV_ALGO(vector, f16, __half, float);

// @BE csrmv_merge_f32
BE_DEFINE_CSRMV_ALGO(merge,
                     f32,
                     float,
                     float)
// @BE csrmv_merge_f64
BE_DEFINE_CSRMV_ALGO(merge,
                     f64,
                     double,
                     double)
// @BE csrmv_merge_f16
BE_DEFINE_CSRMV_ALGO(merge,
                     f16,
                     __half,
                     float)

// @BE csr_diag_scale_f32
BE_DEFINE_CSR_DIAG_SCALE(_f32, float)
// @BE csr_diag_scale_f64
BE_DEFINE_CSR_DIAG_SCALE(_f64, double)
// @BE csr_diag_scale_f16
BE_DEFINE_CSR_DIAG_SCALE(_f16, __half)
