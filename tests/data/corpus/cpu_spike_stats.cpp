// cpu_spike_stats.cpp -- population statistics of spike rasters (host).
//
// Spike rasters are [T, N] bool arrays.  The annotations mix inferred specs,
// explicit specs and the brainevent aliases (args / rets / attrs.<name>).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
#include "brainevent/common.h"

namespace {

struct Raster {
    const bool* s;
    int64_t steps, n;
    explicit Raster(const BE::Tensor& t)
        : s(t.data_ptr<bool>()), steps(t.size(0)), n(t.size(1)) {
        BE_CHECK(t.ndim() == 2) << "expected a [T, N] raster, got rank " << t.ndim();
    }
    bool operator()(int64_t t, int64_t i) const { return s[t * n + i]; }
};

}  // namespace

// Mean firing rate of every neuron in Hz.
// @BE cpu_firing_rate args rets attrs.dt_ms:float32
void cpu_firing_rate(const BE::Tensor raster, BE::Tensor rate, float dt_ms) {
    Raster r(raster);
    float* out = rate.data_ptr<float>();
    for (int64_t i = 0; i < r.n; ++i) {
        int64_t k = 0;
        for (int64_t t = 0; t < r.steps; ++t) k += r(t, i);
        out[i] = 1000.f * float(k) / (float(r.steps) * dt_ms);
    }
}

// Population rate smoothed with a box window of `width` steps.
// @BE cpu_population_rate args rets attrs.width attrs.dt_ms
void cpu_population_rate(const BE::Tensor raster, BE::Tensor rate, int32_t width,
                         double dt_ms) {
    Raster r(raster);
    std::vector<double> counts(r.steps, 0.0);
    for (int64_t t = 0; t < r.steps; ++t)
        for (int64_t i = 0; i < r.n; ++i) counts[t] += r(t, i);
    double* out = rate.data_ptr<double>();
    for (int64_t t = 0; t < r.steps; ++t) {
        double acc = 0;
        int64_t lo = std::max<int64_t>(0, t - width / 2), hi = std::min(r.steps, t + width / 2 + 1);
        for (int64_t u = lo; u < hi; ++u) acc += counts[u];
        out[t] = 1000.0 * acc / (double(hi - lo) * double(r.n) * dt_ms);
    }
}

// Inter-spike-interval histogram, `n_bins` bins of `bin_steps` steps.
// @BE cpu_isi_histogram
void cpu_isi_histogram(const BE::Tensor raster, BE::Tensor hist, int32_t bin_steps) {
    Raster r(raster);
    int64_t* h = hist.data_ptr<int64_t>();
    const int64_t n_bins = hist.numel();
    std::fill(h, h + n_bins, int64_t(0));
    for (int64_t i = 0; i < r.n; ++i) {
        int64_t last = -1;
        for (int64_t t = 0; t < r.steps; ++t) {
            if (!r(t, i)) continue;
            if (last >= 0) h[std::min(n_bins - 1, (t - last) / bin_steps)] += 1;
            last = t;
        }
    }
}

// Fano factor of spike counts in windows of `window` steps, per neuron, and
// the number of windows actually used.
// @BE cpu_fano_factor arg ret ret attr.window:int64
void cpu_fano_factor(const BE::Tensor raster, BE::Tensor fano, BE::Tensor n_windows,
                     int64_t window) {
    Raster r(raster);
    const int64_t w = r.steps / window;
    float* f = fano.data_ptr<float>();
    for (int64_t i = 0; i < r.n; ++i) {
        double s = 0, s2 = 0;
        for (int64_t k = 0; k < w; ++k) {
            double c = 0;
            for (int64_t t = k * window; t < (k + 1) * window; ++t) c += r(t, i);
            s += c;
            s2 += c * c;
        }
        const double mean = w ? s / w : 0, var = w ? s2 / w - mean * mean : 0;
        f[i] = mean > 0 ? float(var / mean) : 0.f;
    }
    *n_windows.data_ptr<int64_t>() = w;
}

// Pairwise spike-count correlation between the first `n_pairs` neurons.
// @BE cpu_count_correlation
void cpu_count_correlation(const BE::Tensor raster,
                           BE::Tensor corr,
                           const unsigned int n_pairs,
                           const float min_rate) {
    Raster r(raster);
    const int64_t m = std::min<int64_t>(n_pairs, r.n);
    std::vector<double> c(m, 0.0);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t t = 0; t < r.steps; ++t) c[i] += r(t, i);
    float* out = corr.data_ptr<float>();
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j) {
            const bool ok = c[i] / r.steps >= min_rate && c[j] / r.steps >= min_rate;
            out[i * m + j] = ok ? float(std::sqrt(c[i] * c[j]) / r.steps) : 0.f;
        }
}
