// The trivial kernel of the overhead benchmark with its handler written by
// hand against XLA's own C++ API (xla/ffi/api/ffi.h): out = x * scale.
// Compiled at benchmark time with
//   g++ -std=c++17 -O3 -fPIC -shared -I "$(python -c 'import jax.ffi; print(jax.ffi.include_dir())')"
#include <cstdint>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static ffi::Error ScaleImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> out, float scale) {
    const float* in = x.typed_data();
    float* o = out->typed_data();
    const int64_t n = static_cast<int64_t>(x.element_count());
    for (int64_t i = 0; i < n; ++i) o[i] = in[i] * scale;
    return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(xla_ffi_scale, ScaleImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("scale"),
                              {ffi::Traits::kCmdBufferCompatible});
