// A tiny CPU kernel module: the FFI targets "kernels.add_offset" and
// "kernels.scale".
#include "brainevent/common.h"
#include "kernels.h"

// @BE add_offset
void add_offset(const BE::Tensor x, BE::Tensor out) {
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + KERNELS_OFFSET;
}

// @BE scale arg ret attr.factor:float32
void scale(const BE::Tensor x, BE::Tensor out, float factor) {
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * factor;
}
