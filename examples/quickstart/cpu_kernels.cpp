// CPU kernels for JAX, compiled by bekc. Each `// @BE` comment exports the
// function below it as an XLA FFI target named "quickstart.<function>".
//
// The handler passes on whatever arrays the caller chose: any dtype, any
// shape (an output defaults to the first input's). So each kernel first
// checks the dtypes and sizes its loops rely on, with BE_CHECK: a wrong call
// then raises a Python exception that says what was wrong, instead of
// reading or writing past a buffer.
#include <cmath>

#include "brainevent/common.h"

// The spec is inferred from the signature: two inputs, one output.
// @BE vector_add
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    BE_CHECK(a.dtype() == BE::DType::Float32 && b.dtype() == BE::DType::Float32 &&
             out.dtype() == BE::DType::Float32)
        << "vector_add takes float32, got " << a.dtype() << " + " << b.dtype() << " -> "
        << out.dtype();
    BE_CHECK(a.numel() == b.numel() && out.numel() == a.numel())
        << "sizes differ: " << a.numel() << " + " << b.numel() << " -> " << out.numel();
    const float* x = a.data_ptr<float>();
    const float* y = b.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < a.numel(); ++i) o[i] = x[i] + y[i];
}

// A leaky integrate-and-fire step with scalar attributes; two outputs.
// @BE lif_step
void lif_step(const BE::Tensor v, const BE::Tensor input, BE::Tensor v_out, BE::Tensor spikes,
              float tau, float v_th, float v_reset) {
    BE_CHECK(v.dtype() == BE::DType::Float32 && input.dtype() == BE::DType::Float32 &&
             v_out.dtype() == BE::DType::Float32)
        << "v, input and v_out must be float32, got " << v.dtype() << ", " << input.dtype() << ", "
        << v_out.dtype();
    BE_CHECK(spikes.dtype() == BE::DType::Bool) << "spikes must be bool, got " << spikes.dtype();
    const int64_t n = v.numel();
    BE_CHECK(input.numel() == n && v_out.numel() == n && spikes.numel() == n)
        << "sizes differ: v " << n << ", input " << input.numel() << ", v_out " << v_out.numel()
        << ", spikes " << spikes.numel();
    const float* vv = v.data_ptr<float>();
    const float* in = input.data_ptr<float>();
    float* vo = v_out.data_ptr<float>();
    bool* s = spikes.data_ptr<bool>();
    for (int64_t i = 0; i < n; ++i) {
        float next = vv[i] + (in[i] - vv[i]) / tau;
        s[i] = next >= v_th;
        vo[i] = s[i] ? v_reset : next;
    }
}

// Macro-generated families are traced through their #define.
#define DEFINE_SCALE(SUFFIX, T, DTYPE)                                                          \
    void scale##SUFFIX(const BE::Tensor x, BE::Tensor out, T factor) {                          \
        BE_CHECK(x.dtype() == BE::DType::DTYPE && out.dtype() == BE::DType::DTYPE)              \
            << "scale" #SUFFIX " takes " << BE::DType::DTYPE << ", got " << x.dtype() << " -> " \
            << out.dtype();                                                                     \
        BE_CHECK(out.numel() == x.numel())                                                      \
            << "out has " << out.numel() << " elements, x " << x.numel();                       \
        const T* in = x.data_ptr<T>();                                                          \
        T* o = out.data_ptr<T>();                                                               \
        for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * factor;                          \
    }

// @BE scale_f32
DEFINE_SCALE(_f32, float, Float32)
// @BE scale_f64
DEFINE_SCALE(_f64, double, Float64)
