// Runs the brainevent kernel headers on a GPU: BE::Tensor by value in a kernel,
// dispatch, host-side BE_CUDA_CHECK / BE_CHECK_KERNEL_LAUNCH throwing BE::Error,
// and, last (it ruins the CUDA context), a failing device-side BE_CHECK that
// must print its message and trap.
//
//   nvcc -std=c++17 -arch=native tests/abi/cuda_runtime_test.cu -I runtime/include -o t && ./t
//
// Exit status 0 when every step behaved; the device message goes to stdout.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "brainevent/common.h"

namespace {

int g_failures = 0;

void expect(bool ok, const char* what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) ++g_failures;
}

template <class T>
__global__ void affine_kernel(const BE::Tensor x, BE::Tensor out, T a, T b) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= x.numel()) return;
    // Row and column from the tensor's own strides, read on the device.
    const int64_t row = i / x.stride(0);
    const int64_t col = i % x.stride(0);
    out.data_ptr<T>()[row * out.stride(0) + col] = a * x.data_ptr<T>()[i] + b;
}

__global__ void failing_kernel(const BE::Tensor x) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    BE_CHECK(i < 3 || x.ndim() == 5) << "thread " << i << " saw rank " << x.ndim() << ", dtype "
                                     << x.dtype() << ", value " << 2.5;
}

// Throws BE::Error; returns its what() text, or "" if nothing was thrown.
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const BE::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

int main() {
    const int64_t dims[2] = {3, 4};
    float host[12];
    for (int i = 0; i < 12; ++i) host[i] = static_cast<float>(i);
    void* dx = nullptr;
    void* dout = nullptr;
    BE_CUDA_CHECK(cudaMalloc(&dx, sizeof host));
    BE_CUDA_CHECK(cudaMalloc(&dout, sizeof host));
    BE_CUDA_CHECK(cudaMemcpy(dx, host, sizeof host, cudaMemcpyHostToDevice));
    const BE::Tensor x(dx, BE::DType::Float32, 2, dims);
    BE::Tensor out(dout, BE::DType::Float32, 2, dims);

    BE_DISPATCH_FLOATING(x.dtype(), scalar_t,
                         { affine_kernel<scalar_t><<<1, 32>>>(x, out, scalar_t(2), scalar_t(1)); });
    BE_CHECK_KERNEL_LAUNCH();
    float result[12];
    BE_CUDA_CHECK(cudaMemcpy(result, dout, sizeof result, cudaMemcpyDeviceToHost));
    bool values_ok = true;
    for (int i = 0; i < 12; ++i) values_ok = values_ok && result[i] == 2.0f * i + 1.0f;
    expect(values_ok, "Tensor by value: kernel computed 2x+1 over a 3x4 tensor");

    std::string e = error_of([&] {
        BE_CUDA_CHECK(cudaMemcpy(nullptr, host, sizeof host, cudaMemcpyHostToDevice)) << "copy x";
    });
    std::printf("  %s\n", e.c_str());
    expect(e.find("BE_CUDA_CHECK(cudaMemcpy(") != std::string::npos &&
               e.find("cudaErrorInvalidValue") != std::string::npos &&
               e.find(": copy x") != std::string::npos,
           "BE_CUDA_CHECK throws BE::Error naming the call, the CUDA error and the message");

    e = error_of([&] {
        affine_kernel<float><<<1, 4096>>>(x, out, 1.0f, 0.0f);  // more threads than a block holds
        BE_CHECK_KERNEL_LAUNCH() << "affine";
    });
    std::printf("  %s\n", e.c_str());
    // The exact code depends on the CUDA version (InvalidValue on CUDA 13).
    expect(e.find(": kernel launch failed with cudaError") != std::string::npos &&
               e.find(": affine") != std::string::npos,
           "BE_CHECK_KERNEL_LAUNCH throws after a bad launch");

    std::fflush(stdout);
    failing_kernel<<<1, 4>>>(x);
    cudaError_t status = cudaDeviceSynchronize();
    std::printf("failing kernel -> %s\n", cudaGetErrorName(status));
    expect(status != cudaSuccess, "device BE_CHECK traps: the kernel fails");

    std::printf("%d failed\n", g_failures);
    return g_failures == 0 ? 0 : 1;
}
