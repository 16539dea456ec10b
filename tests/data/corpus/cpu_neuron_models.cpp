// cpu_neuron_models.cpp -- one-compartment neuron models on the host.
//
// BE_DEFINE_CPU_NEURON(MODEL, SUFFIX, T) pastes the model name into the middle
// of the exported name: cpu_<MODEL>_step<SUFFIX>.  The number of Euler
// substeps is an int64 attribute (an int64_t that is not called `stream`).

#include <cmath>
#include <cstdint>
#include "brainevent/common.h"

namespace models {

template <typename T> struct lif_model {
    static T dv(T v, T i, T tau) { return (-v + i) / tau; }
};
template <typename T> struct exp_lif_model {
    // Exponential IF with a fixed sharpness of 2 mV around the threshold.
    static T dv(T v, T i, T tau) { return (-v + T(2) * std::exp((v - T(-50)) / T(2)) + i) / tau; }
};
template <typename T> struct qif_model {
    static T dv(T v, T i, T tau) { return (v * v + i) / tau; }
};
template <typename T> struct alif_model {
    // Adaptation folded into an effective input; the adaptive threshold is
    // handled in the step function by a fixed 10% increase after a spike.
    static T dv(T v, T i, T tau) { return (-v + T(0.9) * i) / tau; }
};

template <typename T, template <typename> class M>
void step(const T* v, const T* i_in, T* v_out, bool* spikes, int64_t n, T tau, T v_th,
          T v_reset, T dt, int64_t n_substeps) {
    const T h = dt / static_cast<T>(n_substeps);
    for (int64_t k = 0; k < n; ++k) {
        T vk = v[k];
        bool fired = false;
        for (int64_t s = 0; s < n_substeps; ++s) {
            vk += h * M<T>::dv(vk, i_in[k], tau);
            if (vk >= v_th) { vk = v_reset; fired = true; }
        }
        v_out[k] = vk;
        spikes[k] = fired;
    }
}

}  // namespace models

#define BE_DEFINE_CPU_NEURON(MODEL, SUFFIX, T)                                     \
    void cpu_##MODEL##_step##SUFFIX(const BE::Tensor v,                            \
                                    const BE::Tensor i_in,                         \
                                    BE::Tensor v_out,                              \
                                    BE::Tensor spikes,                             \
                                    T tau, T v_th, T v_reset, T dt,                \
                                    int64_t n_substeps) {                          \
        BE_CHECK(n_substeps > 0) << "cpu_" #MODEL "_step: n_substeps must be > 0"; \
        BE_CHECK(v.numel() == i_in.numel()) << "cpu_" #MODEL "_step: size mismatch"; \
        models::step<T, models::MODEL##_model>(                                    \
            v.data_ptr<T>(), i_in.data_ptr<T>(), v_out.data_ptr<T>(),              \
            spikes.data_ptr<bool>(), v.numel(), tau, v_th, v_reset, dt,            \
            n_substeps);                                                           \
    }

// @BE cpu_lif_step_f32
BE_DEFINE_CPU_NEURON(lif, _f32, float)
// @BE cpu_lif_step_f64
BE_DEFINE_CPU_NEURON(lif, _f64, double)
// @BE cpu_exp_lif_step_f32
BE_DEFINE_CPU_NEURON(exp_lif, _f32, float)
// @BE cpu_exp_lif_step_f64
BE_DEFINE_CPU_NEURON(exp_lif, _f64, double)
// @BE cpu_qif_step_f32
BE_DEFINE_CPU_NEURON(qif, _f32, float)
// @BE cpu_qif_step_f64
BE_DEFINE_CPU_NEURON(qif, _f64, double)
// @BE cpu_alif_step_f32
BE_DEFINE_CPU_NEURON(alif, _f32, float)
// @BE cpu_alif_step_f64
BE_DEFINE_CPU_NEURON(alif, _f64, double)

// Hand-written: membrane potential statistics for monitoring.
// @BE cpu_membrane_stats_f32 arg ret ret attr.v_th:float32
void cpu_membrane_stats_f32(const BE::Tensor v, BE::Tensor mean_var, BE::Tensor n_above,
                            float v_th) {
    const float* p = v.data_ptr<float>();
    double s = 0.0, s2 = 0.0;
    int64_t above = 0;
    for (int64_t k = 0; k < v.numel(); ++k) {
        s += p[k];
        s2 += double(p[k]) * p[k];
        above += p[k] > v_th;
    }
    const double n = v.numel() > 0 ? double(v.numel()) : 1.0;
    mean_var.data_ptr<float>()[0] = float(s / n);
    mean_var.data_ptr<float>()[1] = float(s2 / n - (s / n) * (s / n));
    n_above.data_ptr<int64_t>()[0] = above;
}
