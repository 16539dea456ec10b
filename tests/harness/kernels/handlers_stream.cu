// A CUDA kernel file whose exported function never touches the GPU on its
// host path: the C++ harness calls it with host buffers and a fake stream to
// check that the handler fetches the stream through the API table
// (Stream_Get) and passes it on as int64_t. It also has a real kernel, so the
// library is what nvcc builds for any .cu file.
#include "brainevent/common.h"

__global__ void fill_kernel(float* out, float value, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = value;
}

// Writes the stream it was given into out (int64[1]); launches nothing when
// launch is false, so it runs on a machine without a GPU.
// @BE stream_probe arg ret stream attr.launch:bool
void stream_probe(const BE::Tensor x, BE::Tensor out, int64_t stream, bool launch) {
    if (launch) {
        fill_kernel<<<1, 32, 0, reinterpret_cast<cudaStream_t>(stream)>>>(
            out.data_ptr<float>(), 1.0f, out.numel());
        BE_CHECK_KERNEL_LAUNCH();
        return;
    }
    (void)x;
    *out.data_ptr<int64_t>() = stream;
}
