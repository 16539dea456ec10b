// cpu_softmax_if0.cpp -- row-wise softmax / logsumexp / layer norm on the host.
//
// An older signature of the softmax family (with an explicit row count) is
// kept under #if 0; the live definition is in the #else branch.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include "brainevent/common.h"

template <typename T>
static void softmax_rows(const T* x, T* y, int64_t rows, int64_t cols, T inv_temp,
                         bool log_space) {
    for (int64_t r = 0; r < rows; ++r) {
        const T* xr = x + r * cols;
        T* yr = y + r * cols;
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c] * inv_temp);
        T s = T(0);
        for (int64_t c = 0; c < cols; ++c) s += std::exp(xr[c] * inv_temp - m);
        const T ls = std::log(s);
        for (int64_t c = 0; c < cols; ++c) {
            const T z = xr[c] * inv_temp - m;
            yr[c] = log_space ? z - ls : std::exp(z) / s;
        }
    }
}

#if 0
#define BE_DEFINE_CPU_SOFTMAX(SUFFIX, T)                                        \
    void cpu_softmax##SUFFIX(const BE::Tensor x, BE::Tensor y, T temperature,   \
                             int64_t n_rows) {                                  \
        softmax_rows<T>(x.data_ptr<T>(), y.data_ptr<T>(), n_rows,               \
                        x.numel() / n_rows, T(1) / temperature, false);         \
    }
// Half-finished rewrite, never compiled:
void cpu_softmax_blocked(const BE::Tensor x, BE::Tensor y) {
    for (int64_t b = 0; b < 8; ++b) {
#else
#define BE_DEFINE_CPU_SOFTMAX(SUFFIX, T)                                        \
    void cpu_softmax##SUFFIX(const BE::Tensor x,                                \
                             BE::Tensor y,                                      \
                             T temperature,                                     \
                             bool log_space) {                                  \
        BE_CHECK(x.ndim() == 2) << "cpu_softmax" #SUFFIX ": expected a matrix";  \
        BE_CHECK(temperature > T(0)) << "cpu_softmax: temperature must be > 0";  \
        softmax_rows<T>(x.data_ptr<T>(), y.data_ptr<T>(), x.size(0), x.size(1), \
                        T(1) / temperature, log_space);                         \
    }
#endif

// @BE cpu_softmax_f32
BE_DEFINE_CPU_SOFTMAX(_f32, float)
// @BE cpu_softmax_f64
BE_DEFINE_CPU_SOFTMAX(_f64, double)

#if 0
// @BE cpu_softmax_f16
BE_DEFINE_CPU_SOFTMAX(_f16, _Float16)
#endif

// @BE cpu_logsumexp_f32
void cpu_logsumexp_f32(const BE::Tensor x, BE::Tensor out) {
    const int64_t rows = x.size(0), cols = x.size(1);
    const float* p = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t c = 0; c < cols; ++c) m = std::max(m, p[r * cols + c]);
        float s = 0.f;
        for (int64_t c = 0; c < cols; ++c) s += std::exp(p[r * cols + c] - m);
        o[r] = m + std::log(s);
    }
}

#if 0
// @BE cpu_layer_norm_f32 arg arg arg ret attr.eps:float64
#else
// @BE cpu_layer_norm_f32 arg arg arg ret attr.eps:float32
#endif
void cpu_layer_norm_f32(const BE::Tensor x, const BE::Tensor gamma, const BE::Tensor beta,
                        BE::Tensor y, float eps) {
    const int64_t rows = x.size(0), cols = x.size(1);
    const float* xp = x.data_ptr<float>();
    const float* g = gamma.data_ptr<float>();
    const float* b = beta.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; ++c) mean += xp[r * cols + c];
        mean /= cols;
        for (int64_t c = 0; c < cols; ++c) {
            const double d = xp[r * cols + c] - mean;
            var += d * d;
        }
        const float inv = 1.f / std::sqrt(float(var / cols) + eps);
        for (int64_t c = 0; c < cols; ++c)
            yp[r * cols + c] = (xp[r * cols + c] - float(mean)) * inv * g[c] + b[c];
    }
}
