// The CPU implementation of the XLACustomKernel in tests/gpu/test_numba_cuda.py.
#include "brainevent/common.h"

// @BE leaky_relu
void leaky_relu(const BE::Tensor x, BE::Tensor out, float alpha) {
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] > 0.f ? in[i] : alpha * in[i];
}
