// The trivial kernel of the overhead benchmark, as a bekc user writes it:
// out = x * scale over a small float32 buffer. The same kernel, with its
// handler written against XLA's own ffi.h, is trivial_xla_ffi.cc.
#include "brainevent/common.h"

// @BE scale arg ret attr.scale:float32
void scale(const BE::Tensor x, BE::Tensor out, float scale) {
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * scale;
}
