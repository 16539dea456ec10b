// A tiny CPU kernel module: the FFI targets "kernels.add_offset" and
// "kernels.scale".
#include "brainevent/common.h"
#include "kernels.h"

// @BE add_offset
void add_offset(const BE::Tensor x, BE::Tensor out) {
    // The caller chooses the arrays (out defaults to x's shape and dtype):
    // check what the loop relies on, so that a wrong call raises an error.
    BE_CHECK(x.dtype() == BE::DType::Float32 && out.dtype() == BE::DType::Float32)
        << "add_offset takes float32, got " << x.dtype() << " -> " << out.dtype();
    BE_CHECK(out.numel() == x.numel()) << "out has " << out.numel() << " elements, x " << x.numel();
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + KERNELS_OFFSET;
}

// @BE scale arg ret attr.factor:float32
void scale(const BE::Tensor x, BE::Tensor out, float factor) {
    BE_CHECK(x.dtype() == BE::DType::Float32 && out.dtype() == BE::DType::Float32)
        << "scale takes float32, got " << x.dtype() << " -> " << out.dtype();
    BE_CHECK(out.numel() == x.numel()) << "out has " << out.numel() << " elements, x " << x.numel();
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * factor;
}
