// Relocatable device code across two inputs of one library: the kernel here
// calls shift(), a __device__ function defined in callee.cu. Built with
// --cuda-flag=-rdc=true; only the device link joins the two.
#include "brainevent/common.h"

extern __device__ float shift(float x);

__global__ void shifted_kernel(const float* in, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = shift(in[i]);
}

// @BE shifted
void shifted(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    int64_t n = x.numel();
    shifted_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), n);
}
