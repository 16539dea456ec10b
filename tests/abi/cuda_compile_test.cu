// Compile-only test of the brainevent kernel headers under nvcc: a realistic
// kernel file using every part of the API in host and device code. It must
// build without a warning, as C++17 and C++20:
//
//   nvcc -std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra
//        -c tests/abi/cuda_compile_test.cu -I runtime/include -o /tmp/t.o
//
// No GPU is needed; nothing here runs.
#include <cuda_runtime.h>

#include "brainevent/common.h"

namespace {

// BE::Tensor passed by value into the kernel: shape, strides and numel are read
// on the device, and BE_CHECK guards an invariant there.
template <class T>
__global__ void scale_rows_kernel(const BE::Tensor x, BE::Tensor out, T factor) {
    const int64_t rows = x.size(0);
    const int64_t cols = x.size(-1);
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= x.numel()) return;
    BE_CHECK(x.stride(0) == cols) << "row stride " << x.stride(0) << " != " << cols << " for dtype "
                                  << x.dtype() << ", factor " << factor;
    const int64_t r = i / cols;
    BE_CHECK(r < rows) << "row " << r << " out of " << rows;
    out.data_ptr<T>()[i] = x.data_ptr<T>()[i] * factor;
}

// A host-device helper: BE_CHECK throws when called from the host, traps when
// called from a kernel.
__host__ __device__ inline int64_t checked_div(int64_t a, int64_t b) {
    BE_CHECK(b != 0) << "division by zero, a = " << a;
    return a / b;
}

__global__ void fill_kernel(BE::Tensor out, float value) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < out.numel()) out.data_ptr<float>()[i] = value + checked_div(i, 1);
}

// A Tensor built in device code: a view of one row of a 2-D tensor.
__global__ void row_sum_kernel(const BE::Tensor x, BE::Tensor sums) {
    const int64_t r = blockIdx.x;
    if (r >= x.size(0) || threadIdx.x != 0) return;
    const BE::Tensor row(x.data_ptr<float>() + r * x.stride(0), x.dtype(), 1, x.shape_ptr() + 1);
    float total = 0;
    for (int64_t c = 0; c < row.numel(); ++c) total += row.data_ptr<float>()[c];
    sums.data_ptr<float>()[r] = total;
}

__global__ void any_dtype_kernel(BE::Tensor out) {
    // Dispatch inside device code: an unsupported dtype traps.
    BE_DISPATCH_ALL_TYPES(out.dtype(), scalar_t, {
        if (threadIdx.x == 0) out.data_ptr<scalar_t>()[0] = scalar_t(1);
    });
}

}  // namespace

// @BE scale_rows arg ret attr.factor:float32 stream
void scale_rows(const BE::Tensor x, BE::Tensor out, float factor, int64_t stream) {
    BE_CHECK(x.ndim() == 2) << "x must be 2-D, got rank " << x.ndim();
    BE_CHECK(x.dtype() == out.dtype()) << "dtype mismatch: " << x.dtype() << " vs " << out.dtype();
    BE_CHECK(x.is_contiguous() && out.nbytes() == x.nbytes());
    const int threads = 256;
    const int blocks = static_cast<int>(checked_div(x.numel() + threads - 1, threads));
    auto s = reinterpret_cast<cudaStream_t>(stream);
    BE_DISPATCH_FLOATING(x.dtype(), scalar_t, {
        scale_rows_kernel<scalar_t>
            <<<blocks, threads, 0, s>>>(x, out, static_cast<scalar_t>(factor));
    });
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE fill arg ret stream
void fill(const BE::Tensor like, BE::Tensor out, int64_t stream) {
    auto s = reinterpret_cast<cudaStream_t>(stream);
    BE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, out.nbytes(), s))
        << "clearing " << out.nbytes() << " bytes";
    fill_kernel<<<static_cast<unsigned>((like.numel() + 255) / 256), 256, 0, s>>>(out, 1.0f);
    BE_CHECK_KERNEL_LAUNCH() << "fill_kernel";
    any_dtype_kernel<<<1, 32, 0, s>>>(out);
    BE_CHECK_KERNEL_LAUNCH();
    row_sum_kernel<<<static_cast<unsigned>(like.size(0)), 32, 0, s>>>(like, out);
    BE_CHECK_KERNEL_LAUNCH();
    if (out.numel() == 0)
        BE_CUDA_CHECK(cudaStreamSynchronize(s));
    else
        BE_CHECK(out.numel() > 0);
}

// Half types under nvcc are CUDA's own, so kernels can do arithmetic on them
// once they include CUDA's half headers, here after brainevent/common.h, which
// only declares the types.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__global__ void half_kernel(BE::Tensor t) {
    BE_DISPATCH_FLOATING_AND_HALF(t.dtype(), scalar_t, {
        scalar_t* p = t.data_ptr<scalar_t>();
        if (threadIdx.x == 0) p[0] = static_cast<scalar_t>(static_cast<float>(p[0]) * 2.0f);
    });
}

static_assert(std::is_trivially_copyable<BE::Tensor>::value,
              "kernel parameters are copied bytewise");
static_assert(std::is_same<BE::float16_t, __half>::value, "nvcc sees CUDA's half type");
static_assert(std::is_same<BE::bfloat16_t, __nv_bfloat16>::value, "and CUDA's bfloat16");
static_assert(sizeof(BE::float16_t) == 2 && sizeof(BE::bfloat16_t) == 2,
              "complete after the include");
