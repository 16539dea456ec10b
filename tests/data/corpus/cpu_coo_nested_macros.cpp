// cpu_coo_nested_macros.cpp -- COO sparse mat-vec on the host.
//
// Three levels of macros: BE_DEFINE_COO_ALL expands BE_DEFINE_COO_MV and
// BE_DEFINE_COO_MV_T, which both build their signature with BE_COO_SIG from a
// name pasted in the outer macro.  A variadic macro covers the reductions.

#include <cstdint>
#include <cstring>
#include "brainevent/common.h"

template <typename T, bool TRANS>
static void coo_mv(const int32_t* rows, const int32_t* cols, const T* data, const T* x,
                   T* y, int64_t nnz, int64_t n_out, T alpha) {
    std::memset(y, 0, sizeof(T) * n_out);
    for (int64_t k = 0; k < nnz; ++k) {
        if (TRANS) y[cols[k]] += alpha * data[k] * x[rows[k]];
        else       y[rows[k]] += alpha * data[k] * x[cols[k]];
    }
}

#define BE_COO_SIG(NAME, T)                                                    \
    void NAME(const BE::Tensor rows,                                           \
              const BE::Tensor cols,                                           \
              const BE::Tensor data,                                           \
              const BE::Tensor x,                                              \
              BE::Tensor y,                                                    \
              T alpha)

#define BE_DEFINE_COO_MV(SUFFIX, T)                                            \
    BE_COO_SIG(cpu_coomv##SUFFIX, T) {                                         \
        coo_mv<T, false>(rows.data_ptr<int32_t>(), cols.data_ptr<int32_t>(),   \
                         data.data_ptr<T>(), x.data_ptr<T>(), y.data_ptr<T>(), \
                         data.numel(), y.numel(), alpha);                      \
    }

#define BE_DEFINE_COO_MV_T(SUFFIX, T)                                          \
    BE_COO_SIG(cpu_coomv_t##SUFFIX, T) {                                       \
        coo_mv<T, true>(rows.data_ptr<int32_t>(), cols.data_ptr<int32_t>(),    \
                        data.data_ptr<T>(), x.data_ptr<T>(), y.data_ptr<T>(),  \
                        data.numel(), y.numel(), alpha);                       \
    }

#define BE_DEFINE_COO_ALL(SUFFIX, T)                                           \
    BE_DEFINE_COO_MV(SUFFIX, T)                                                \
    BE_DEFINE_COO_MV_T(SUFFIX, T)

// @BE cpu_coomv_f32
// @BE cpu_coomv_t_f32
BE_DEFINE_COO_ALL(_f32, float)
// @BE cpu_coomv_f64
// @BE cpu_coomv_t_f64
BE_DEFINE_COO_ALL(_f64, double)
// @BE cpu_coomv_i32
// @BE cpu_coomv_t_i32
BE_DEFINE_COO_ALL(_i32, int32_t)
// @BE cpu_coomv_i64
// @BE cpu_coomv_t_i64
BE_DEFINE_COO_ALL(_i64, int64_t)

// Row-wise reductions over the stored entries.  The extra scalar parameters
// differ per reduction, so they are passed through __VA_ARGS__.
template <typename T>
static void coo_row_reduce(const int32_t* rows, const T* data, T* out, int64_t nnz,
                           int64_t n_rows, T init, T scale, bool take_max) {
    for (int64_t r = 0; r < n_rows; ++r) out[r] = init;
    for (int64_t k = 0; k < nnz; ++k) {
        T v = data[k] * scale;
        T& o = out[rows[k]];
        o = take_max ? (v > o ? v : o) : o + v;
    }
}

#define BE_DEFINE_COO_REDUCE(NAME, T, INIT, SCALE, TAKE_MAX, ...)              \
    void NAME(const BE::Tensor rows, const BE::Tensor data, BE::Tensor out,    \
              __VA_ARGS__) {                                                   \
        coo_row_reduce<T>(rows.data_ptr<int32_t>(), data.data_ptr<T>(),        \
                          out.data_ptr<T>(), data.numel(), out.numel(),        \
                          INIT, SCALE, TAKE_MAX);                              \
    }

// @BE cpu_coo_row_sum_f32
BE_DEFINE_COO_REDUCE(cpu_coo_row_sum_f32, float, 0.f, scale, false, float scale)
// @BE cpu_coo_row_max_f32
BE_DEFINE_COO_REDUCE(cpu_coo_row_max_f32, float, floor_value, 1.f, true,
                     float floor_value)
// @BE cpu_coo_row_sum_f64
BE_DEFINE_COO_REDUCE(cpu_coo_row_sum_f64, double, init, scale, false,
                     double init, double scale)
// @BE cpu_coo_row_count_i32 arg arg ret attr.weight:int32 attr.unused:bool
BE_DEFINE_COO_REDUCE(cpu_coo_row_count_i32, int32_t, 0, weight, false,
                     int32_t weight, bool unused)
