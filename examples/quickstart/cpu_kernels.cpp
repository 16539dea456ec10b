// CPU kernels for JAX, compiled by bekc. Each `// @BE` comment exports the
// function below it as an XLA FFI target named "quickstart.<function>".
#include <cmath>

#include "brainevent/common.h"

// The spec is inferred from the signature: two inputs, one output.
// @BE vector_add
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    BE_CHECK(a.numel() == b.numel()) << "inputs differ in size: " << a.numel() << " vs " << b.numel();
    const float* x = a.data_ptr<float>();
    const float* y = b.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < a.numel(); ++i) o[i] = x[i] + y[i];
}

// A leaky integrate-and-fire step with scalar attributes; two outputs.
// @BE lif_step
void lif_step(const BE::Tensor v, const BE::Tensor input, BE::Tensor v_out, BE::Tensor spikes,
              float tau, float v_th, float v_reset) {
    const float* vv = v.data_ptr<float>();
    const float* in = input.data_ptr<float>();
    float* vo = v_out.data_ptr<float>();
    bool* s = spikes.data_ptr<bool>();
    for (int64_t i = 0; i < v.numel(); ++i) {
        float next = vv[i] + (in[i] - vv[i]) / tau;
        s[i] = next >= v_th;
        vo[i] = s[i] ? v_reset : next;
    }
}

// Macro-generated families are traced through their #define.
#define DEFINE_SCALE(SUFFIX, T)                                              \
    void scale##SUFFIX(const BE::Tensor x, BE::Tensor out, T factor) {       \
        for (int64_t i = 0; i < x.numel(); ++i)                              \
            out.data_ptr<T>()[i] = x.data_ptr<T>()[i] * factor;              \
    }

// @BE scale_f32
DEFINE_SCALE(_f32, float)
// @BE scale_f64
DEFINE_SCALE(_f64, double)
