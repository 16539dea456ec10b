// CPU kernels, exported as the FFI targets "example.add_bias" and
// "example.axpy" (TARGET_PREFIX in CMakeLists.txt).
#include "brainevent/common.h"
#include "ops.h"

// @BE add_bias
void add_bias(const BE::Tensor x, BE::Tensor out) {
    // The caller chooses the arrays (out defaults to x's shape and dtype):
    // check what the loop relies on, so that a wrong call raises an error.
    BE_CHECK(x.dtype() == BE::DType::Float32 && out.dtype() == BE::DType::Float32)
        << "add_bias takes float32, got " << x.dtype() << " -> " << out.dtype();
    BE_CHECK(out.numel() == x.numel()) << "out has " << out.numel() << " elements, x " << x.numel();
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + ops::kBias;
}

// out = alpha * x + y, for float32 and float64.
// @BE axpy
void axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, double alpha) {
    BE_CHECK(y.dtype() == x.dtype() && out.dtype() == x.dtype())
        << "x, y and out must have one dtype, got " << x.dtype() << ", " << y.dtype() << ", "
        << out.dtype();
    BE_CHECK(x.numel() == y.numel() && out.numel() == x.numel())
        << "x has " << x.numel() << " elements, y " << y.numel() << ", out " << out.numel();
    BE_DISPATCH_FLOATING(x.dtype(), scalar_t, {
        const scalar_t* a = x.data_ptr<scalar_t>();
        const scalar_t* b = y.data_ptr<scalar_t>();
        scalar_t* o = out.data_ptr<scalar_t>();
        for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<scalar_t>(alpha) * a[i] + b[i];
    });
}
