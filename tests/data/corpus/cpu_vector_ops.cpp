// cpu_vector_ops.cpp -- host implementations of the element-wise kernels.
//
// CPU entry points never take a stream: XLA runs them on its own thread.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include "brainevent/common.h"

namespace {

template <typename T, typename F>
void map1(const BE::Tensor& x, BE::Tensor& out, F f) {
    BE_CHECK(x.numel() == out.numel()) << "map1: size mismatch " << x.numel() << " vs "
                                       << out.numel();
    const T* xp = x.data_ptr<T>();
    T* op = out.data_ptr<T>();
    const int64_t n = x.numel();
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; ++i) op[i] = f(xp[i]);
}

template <typename T, typename F>
void map2(const BE::Tensor& a, const BE::Tensor& b, BE::Tensor& out, F f) {
    BE_CHECK(a.numel() == b.numel() && a.numel() == out.numel()) << "map2: size mismatch";
    const T* ap = a.data_ptr<T>();
    const T* bp = b.data_ptr<T>();
    T* op = out.data_ptr<T>();
    const int64_t n = a.numel();
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; ++i) op[i] = f(ap[i], bp[i]);
}

}  // namespace

// @BE cpu_vec_add arg arg ret
void cpu_vec_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    map2<float>(a, b, out, [](float x, float y) { return x + y; });
}

// @BE cpu_vec_add_f64
void cpu_vec_add_f64(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    map2<double>(a, b, out, [](double x, double y) { return x + y; });
}

// @BE cpu_vec_scale arg ret attr.factor:float32
void cpu_vec_scale(const BE::Tensor x, BE::Tensor out, float factor) {
    map1<float>(x, out, [factor](float v) { return v * factor; });
}

// @BE cpu_vec_axpy
void cpu_vec_axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, double alpha) {
    map2<double>(x, y, out, [alpha](double a, double b) { return alpha * a + b; });
}

// @BE cpu_vec_clamp arg ret attr.lo attr.hi
void cpu_vec_clamp(const BE::Tensor x, BE::Tensor out, float lo, float hi) {
    BE_CHECK(lo <= hi) << "cpu_vec_clamp: empty interval [" << lo << ", " << hi << "]";
    map1<float>(x, out, [lo, hi](float v) { return std::min(std::max(v, lo), hi); });
}

// @BE cpu_vec_tanh
void cpu_vec_tanh(const BE::Tensor x, BE::Tensor out) {
    map1<float>(x, out, [](float v) { return std::tanh(v); });
}

// Copies the input and counts non-finite values into a second output.
// @BE cpu_vec_sanitize
void cpu_vec_sanitize(const BE::Tensor x, BE::Tensor out, BE::Tensor n_bad,
                      float replacement) {
    const float* xp = x.data_ptr<float>();
    float* op = out.data_ptr<float>();
    int64_t bad = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        if (std::isfinite(xp[i])) {
            op[i] = xp[i];
        } else {
            op[i] = replacement;
            ++bad;
        }
    }
    *n_bad.data_ptr<int64_t>() = bad;
}

// @BE cpu_vec_copy arg ret
void cpu_vec_copy(const BE::Tensor x, BE::Tensor out) {
    std::memcpy(out.data_ptr(), x.data_ptr(), x.nbytes());
}
