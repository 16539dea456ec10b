// cpu_csr.cpp -- host CSR mat-vec (dense and event-driven) for XLA:CPU.
//
// Families:
//   BE_DEFINE_CPU_CSRMV(SUFFIX, T, I, TRANS)          -> cpu_csrmv<SUFFIX>
//   BE_DEFINE_CPU_EVENT_CSRMV(SUFFIX, T, SPIKE_T, HOMO) -> cpu_event_csrmv<SUFFIX>
// T: value type, I: index type, SPIKE_T: spike vector type.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>
#include "brainevent/common.h"

namespace be_cpu {

template <typename T, typename I, bool TRANS>
void csrmv(const T* data, const I* indices, const I* indptr, const T* x, T* y,
           int64_t n_rows, int64_t n_out, T alpha) {
    if (!TRANS) {
        for (int64_t r = 0; r < n_rows; ++r) {
            T acc = T(0);
            for (I k = indptr[r]; k < indptr[r + 1]; ++k) acc += data[k] * x[indices[k]];
            y[r] = alpha * acc;
        }
    } else {
        std::memset(y, 0, sizeof(T) * n_out);
        for (int64_t r = 0; r < n_rows; ++r) {
            const T xr = alpha * x[r];
            if (xr == T(0)) continue;
            for (I k = indptr[r]; k < indptr[r + 1]; ++k) y[indices[k]] += data[k] * xr;
        }
    }
}

template <typename T, typename S, bool HOMO>
void event_csrmv(const T* weights, const int32_t* indices, const int32_t* indptr,
                 const S* spikes, T* out, int64_t n_pre, int64_t n_post) {
    std::fill(out, out + n_post, T(0));
    for (int64_t i = 0; i < n_pre; ++i) {
        if (!(spikes[i] != S(0))) continue;  // event-driven: skip silent neurons
        for (int32_t k = indptr[i]; k < indptr[i + 1]; ++k)
            out[indices[k]] += HOMO ? weights[0] : weights[k];
    }
}

}  // namespace be_cpu

#define BE_DEFINE_CPU_CSRMV(SUFFIX, T, I, TRANS)                                   \
    void cpu_csrmv##SUFFIX(const BE::Tensor data,                                  \
                           const BE::Tensor indices,                               \
                           const BE::Tensor indptr,                                \
                           const BE::Tensor x,                                     \
                           BE::Tensor y,                                           \
                           T alpha) {                                              \
        BE_CHECK(data.numel() == indices.numel())                                  \
            << "cpu_csrmv" #SUFFIX ": data and indices differ in length";         \
        be_cpu::csrmv<T, I, TRANS>(data.data_ptr<T>(), indices.data_ptr<I>(),      \
                                   indptr.data_ptr<I>(), x.data_ptr<T>(),          \
                                   y.data_ptr<T>(), indptr.numel() - 1,            \
                                   y.numel(), alpha);                              \
    }

#define BE_DEFINE_CPU_EVENT_CSRMV(SUFFIX, T, SPIKE_T, HOMO)                        \
    void cpu_event_csrmv##SUFFIX(const BE::Tensor weights,                         \
                                 const BE::Tensor indices,                         \
                                 const BE::Tensor indptr,                          \
                                 const BE::Tensor spikes,                          \
                                 BE::Tensor out) {                                 \
        be_cpu::event_csrmv<T, SPIKE_T, HOMO>(                                     \
            weights.data_ptr<T>(), indices.data_ptr<int32_t>(),                    \
            indptr.data_ptr<int32_t>(), spikes.data_ptr<SPIKE_T>(),                \
            out.data_ptr<T>(), indptr.numel() - 1, out.numel());                   \
    }

// @BE cpu_csrmv_f32_i32
BE_DEFINE_CPU_CSRMV(_f32_i32, float, int32_t, false)
// @BE cpu_csrmv_f64_i32
BE_DEFINE_CPU_CSRMV(_f64_i32, double, int32_t, false)
// @BE cpu_csrmv_f32_i64
BE_DEFINE_CPU_CSRMV(_f32_i64, float, int64_t, false)
// @BE cpu_csrmv_f64_i64
BE_DEFINE_CPU_CSRMV(_f64_i64, double, int64_t, false)
// @BE cpu_csrmv_t_f32_i32
BE_DEFINE_CPU_CSRMV(_t_f32_i32, float, int32_t, true)
// @BE cpu_csrmv_t_f64_i32
BE_DEFINE_CPU_CSRMV(_t_f64_i32, double, int32_t, true)
// @BE cpu_csrmv_t_f32_i64
BE_DEFINE_CPU_CSRMV(_t_f32_i64, float, int64_t, true)
// @BE cpu_csrmv_t_f64_i64
BE_DEFINE_CPU_CSRMV(_t_f64_i64, double, int64_t, true)

// @BE cpu_event_csrmv_homo_bool_f32
BE_DEFINE_CPU_EVENT_CSRMV(_homo_bool_f32, float, bool, true)
// @BE cpu_event_csrmv_hetero_bool_f32
BE_DEFINE_CPU_EVENT_CSRMV(_hetero_bool_f32, float, bool, false)
// @BE cpu_event_csrmv_homo_float_f32
BE_DEFINE_CPU_EVENT_CSRMV(_homo_float_f32, float, float, true)
// @BE cpu_event_csrmv_hetero_float_f32
BE_DEFINE_CPU_EVENT_CSRMV(_hetero_float_f32, float, float, false)
// @BE cpu_event_csrmv_homo_bool_f64
BE_DEFINE_CPU_EVENT_CSRMV(_homo_bool_f64, double, bool, true)
// @BE cpu_event_csrmv_hetero_bool_f64
BE_DEFINE_CPU_EVENT_CSRMV(_hetero_bool_f64, double, bool, false)
// @BE cpu_event_csrmv_homo_u8_f32
BE_DEFINE_CPU_EVENT_CSRMV(_homo_u8_f32, float, uint8_t, true)
// @BE cpu_event_csrmv_hetero_u8_f32
BE_DEFINE_CPU_EVENT_CSRMV(_hetero_u8_f32, float, uint8_t, false)
