// Dtype dispatch: run a block once per supported dtype with `scalar_t` naming
// the element type.
//
//   BE_DISPATCH_FLOATING(x.dtype(), scalar_t, {
//       scale_kernel<scalar_t><<<grid, block, 0, stream>>>(
//           x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.numel());
//   });
//
// Each macro is an immediately invoked lambda around a switch, as in
// brainevent: `return` inside the block leaves the block, not the enclosing
// function. An unsupported dtype fails like BE_CHECK (throws on the host),
// naming the macro, the dtype and the dtypes it accepts.
//
//   macro                          dtypes
//   BE_DISPATCH_FLOATING           float32 float64
//   BE_DISPATCH_FLOATING_AND_HALF  float16 bfloat16 float32 float64 (CUDA compilers);
//                                  float32 float64 (host compilers)
//   BE_DISPATCH_INTEGRAL           bool int8..int64 uint8..uint64
//   BE_DISPATCH_ALL_TYPES          FLOATING + INTEGRAL
//   BE_DISPATCH_COMPLEX            complex64 complex128
//   BE_DISPATCH_ALL                every dtype, halves and complex included
//   BE_DISPATCH_SIGNED_INDEX       int32 int64 (sparse index arrays)
//   BE_DISPATCH_CSR_INDPTR         int32 int64 (CSR row pointers)
//   BE_DISPATCH_SIGNED_INDEX_PAIR  two SIGNED_INDEX dispatches, nested, two names
//   BE_CHECK_CSR_INDICES_INT32(t)  fails like BE_CHECK unless t is int32
//
// The sets are brainevent's, so a kernel written for brainevent dispatches
// the same dtypes. float16 and bfloat16 are kept out of BE_DISPATCH_FLOATING,
// and out of FLOATING_AND_HALF in a host-compiler build: there is no arithmetic
// half type on the CPU, so a block written for float/double would not compile
// for them.
//
// Under nvcc, BE::float16_t and BE::bfloat16_t are CUDA's __half and
// __nv_bfloat16, only declared here: a kernel that computes with them includes
// <cuda_fp16.h> / <cuda_bf16.h> itself, as it would anyway for __half2float
// and friends. Including those headers here would add about 0.5 s to every .cu
// compile (measured with nvcc 13 on an H200 host: 1.75 s instead of 1.03 s for
// a one-line kernel), whether or not it uses half precision.
#pragma once

#include <type_traits>

#include "brainevent/check.h"
#include "brainevent/config.h"
#include "brainevent/dtype.h"
#include "brainevent/tensor.h"  // not needed here, but brainevent's dispatch.h offers BE::Tensor

#if BE_CUDA_COMPILER
// Declarations matching the definitions in cuda_fp16.hpp and cuda_bf16.hpp.
struct __half;
struct __nv_bfloat16;
#endif

namespace BE {

#if BE_CUDA_COMPILER
using float16_t = ::__half;
using bfloat16_t = ::__nv_bfloat16;
#else
// Storage only: a CPU build has no half arithmetic type, so these carry the bits
// and the kernel converts explicitly.
struct float16_t {
    uint16_t bits;
};
struct bfloat16_t {
    uint16_t bits;
};
#endif

// Layout-compatible with std::complex and with CUDA's cuComplex/cuDoubleComplex.
struct alignas(8) complex64_t {
    float real;
    float imag;
};
struct alignas(16) complex128_t {
    double real;
    double imag;
};

namespace detail {

template <class T, class = void>
struct is_complete : std::false_type {};
template <class T>
struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

[[noreturn]] BE_HOST_DEVICE inline void dispatch_fail(const char* file, int line, const char* macro,
                                                      DType dtype, const char* supported) {
#if BE_DEVICE_CODE
    DeviceRaise{} & DeviceErrorBuilder(file, line, macro)
                        << "unsupported dtype " << dtype << " (supported: " << supported << ")";
#else
    Raise{} & ErrorBuilder(file, line, macro)
                  << "unsupported dtype " << dtype << " (supported: " << supported << ")";
#endif
}

// BE_CHECK_CSR_INDICES_INT32's check, a function so that the tensor expression
// is evaluated once and the macro stays an expression.
BE_HOST_DEVICE inline void check_csr_indices_int32(DType dtype, const char* file, int line,
                                                   const char* summary) {
    if (BE_LIKELY(dtype == DType::Int32)) return;
#if BE_DEVICE_CODE
    DeviceRaise{} & DeviceErrorBuilder(file, line, summary)
                        << "CSR column indices must be int32, got " << dtype;
#else
    Raise{} & ErrorBuilder(file, line, summary)
                  << "CSR column indices must be int32, got " << dtype;
#endif
}

}  // namespace detail
}  // namespace BE

// clang-format off
#define BE_DETAIL_DISPATCH_CASE_(enumerator, type, scalar_t, ...) \
    case ::BE::DType::enumerator: {                               \
        using scalar_t = type;                                    \
        __VA_ARGS__                                               \
    } break;

#define BE_DETAIL_FLOATING_CASES_(scalar_t, ...)                     \
    BE_DETAIL_DISPATCH_CASE_(Float32, float, scalar_t, __VA_ARGS__)  \
    BE_DETAIL_DISPATCH_CASE_(Float64, double, scalar_t, __VA_ARGS__)

// Under nvcc the half types are only declared (see the top of this file).
#define BE_DETAIL_HALF_CASE_(enumerator, type, header, scalar_t, ...)             \
    case ::BE::DType::enumerator: {                                               \
        static_assert(::BE::detail::is_complete<type>::value,                     \
                      "computing with " #type " needs #include " header);         \
        using scalar_t = type;                                                    \
        __VA_ARGS__                                                               \
    } break;

#define BE_DETAIL_HALF_CASES_(scalar_t, ...)                                                \
    BE_DETAIL_HALF_CASE_(Float16, ::BE::float16_t, "<cuda_fp16.h>", scalar_t, __VA_ARGS__)  \
    BE_DETAIL_HALF_CASE_(BFloat16, ::BE::bfloat16_t, "<cuda_bf16.h>", scalar_t, __VA_ARGS__)

#define BE_DETAIL_INTEGRAL_CASES_(scalar_t, ...)                       \
    BE_DETAIL_DISPATCH_CASE_(Bool, bool, scalar_t, __VA_ARGS__)        \
    BE_DETAIL_DISPATCH_CASE_(Int8, int8_t, scalar_t, __VA_ARGS__)      \
    BE_DETAIL_DISPATCH_CASE_(Int16, int16_t, scalar_t, __VA_ARGS__)    \
    BE_DETAIL_DISPATCH_CASE_(Int32, int32_t, scalar_t, __VA_ARGS__)    \
    BE_DETAIL_DISPATCH_CASE_(Int64, int64_t, scalar_t, __VA_ARGS__)    \
    BE_DETAIL_DISPATCH_CASE_(UInt8, uint8_t, scalar_t, __VA_ARGS__)    \
    BE_DETAIL_DISPATCH_CASE_(UInt16, uint16_t, scalar_t, __VA_ARGS__)  \
    BE_DETAIL_DISPATCH_CASE_(UInt32, uint32_t, scalar_t, __VA_ARGS__)  \
    BE_DETAIL_DISPATCH_CASE_(UInt64, uint64_t, scalar_t, __VA_ARGS__)

#define BE_DETAIL_COMPLEX_CASES_(scalar_t, ...)                                     \
    BE_DETAIL_DISPATCH_CASE_(Complex64, ::BE::complex64_t, scalar_t, __VA_ARGS__)   \
    BE_DETAIL_DISPATCH_CASE_(Complex128, ::BE::complex128_t, scalar_t, __VA_ARGS__)

// The dtype is the lambda's argument so the expression is evaluated once and
// is still at hand for the error message; `var` names it. The cases come last
// and variadic: the block in them may hold commas, and this macro is reached
// through BE_DETAIL_DISPATCH_, which would split them into arguments.
#define BE_DETAIL_DISPATCH_AS_(var, name, supported, dtype, ...)                    \
    [&](::BE::DType var) {                                                          \
        switch (var) {                                                              \
            __VA_ARGS__                                                             \
            default:                                                                \
                ::BE::detail::dispatch_fail(__FILE__, __LINE__, name, var,          \
                                            supported);                             \
        }                                                                           \
    }(dtype)

#define BE_DETAIL_DISPATCH_(name, supported, dtype, ...)                            \
    BE_DETAIL_DISPATCH_AS_(be_dispatch_dtype_, name, supported, dtype, __VA_ARGS__)

#define BE_DISPATCH_FLOATING(dtype, scalar_t, ...)                                  \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_FLOATING(" #dtype ")", "float32, float64",     \
        dtype, BE_DETAIL_FLOATING_CASES_(scalar_t, __VA_ARGS__))

#if BE_CUDA_COMPILER
#define BE_DISPATCH_FLOATING_AND_HALF(dtype, scalar_t, ...)                         \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_FLOATING_AND_HALF(" #dtype ")",                \
        "float16, bfloat16, float32, float64", dtype,                               \
        BE_DETAIL_HALF_CASES_(scalar_t, __VA_ARGS__)                                \
        BE_DETAIL_FLOATING_CASES_(scalar_t, __VA_ARGS__))
#else
#define BE_DISPATCH_FLOATING_AND_HALF(dtype, scalar_t, ...)                         \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_FLOATING_AND_HALF(" #dtype ")",                \
        "float32, float64; the half types need a CUDA compiler", dtype,             \
        BE_DETAIL_FLOATING_CASES_(scalar_t, __VA_ARGS__))
#endif

#define BE_DISPATCH_INTEGRAL(dtype, scalar_t, ...)                                  \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_INTEGRAL(" #dtype ")",                         \
        "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64", dtype,    \
        BE_DETAIL_INTEGRAL_CASES_(scalar_t, __VA_ARGS__))

#define BE_DISPATCH_ALL_TYPES(dtype, scalar_t, ...)                                 \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_ALL_TYPES(" #dtype ")",                        \
        "float32, float64, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64", \
        dtype,                                                                      \
        BE_DETAIL_FLOATING_CASES_(scalar_t, __VA_ARGS__)                            \
        BE_DETAIL_INTEGRAL_CASES_(scalar_t, __VA_ARGS__))

#define BE_DISPATCH_COMPLEX(dtype, scalar_t, ...)                                   \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_COMPLEX(" #dtype ")", "complex64, complex128", \
        dtype, BE_DETAIL_COMPLEX_CASES_(scalar_t, __VA_ARGS__))

#define BE_DISPATCH_ALL(dtype, scalar_t, ...)                                       \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_ALL(" #dtype ")", "any dtype but invalid",     \
        dtype,                                                                      \
        BE_DETAIL_FLOATING_CASES_(scalar_t, __VA_ARGS__)                            \
        BE_DETAIL_HALF_CASES_(scalar_t, __VA_ARGS__)                                \
        BE_DETAIL_INTEGRAL_CASES_(scalar_t, __VA_ARGS__)                            \
        BE_DETAIL_COMPLEX_CASES_(scalar_t, __VA_ARGS__))

#define BE_DETAIL_SIGNED_INDEX_CASES_(index_t, ...)                                 \
    BE_DETAIL_DISPATCH_CASE_(Int32, int32_t, index_t, __VA_ARGS__)                  \
    BE_DETAIL_DISPATCH_CASE_(Int64, int64_t, index_t, __VA_ARGS__)

// Index arrays of sparse formats: int32 or int64.
#define BE_DISPATCH_SIGNED_INDEX(dtype, index_t, ...)                               \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_SIGNED_INDEX(" #dtype ")", "int32, int64",     \
        dtype, BE_DETAIL_SIGNED_INDEX_CASES_(index_t, __VA_ARGS__))

// CSR row pointers (indptr): int32 or int64.
#define BE_DISPATCH_CSR_INDPTR(dtype, indptr_t, ...)                                \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_CSR_INDPTR(" #dtype ")", "int32, int64",       \
        dtype, BE_DETAIL_SIGNED_INDEX_CASES_(indptr_t, __VA_ARGS__))

// Two signed-index dtypes at once (say, column indices and row offsets): the
// block sees both names. The inner lambda names its dtype differently, so
// -Wshadow stays quiet; the message says which of the two was unsupported.
#define BE_DISPATCH_SIGNED_INDEX_PAIR(index_dtype, offset_dtype, index_t, offset_t, ...) \
    BE_DETAIL_DISPATCH_("BE_DISPATCH_SIGNED_INDEX_PAIR(" #index_dtype ", ...)",          \
        "int32, int64", index_dtype,                                                     \
        BE_DETAIL_SIGNED_INDEX_CASES_(index_t,                                           \
            BE_DETAIL_DISPATCH_AS_(be_dispatch_offset_dtype_,                            \
                "BE_DISPATCH_SIGNED_INDEX_PAIR(..., " #offset_dtype ")",                 \
                "int32, int64", offset_dtype,                                            \
                BE_DETAIL_SIGNED_INDEX_CASES_(offset_t, __VA_ARGS__));))

// The column indices of a CSR matrix must be int32 (brainevent's CUDA kernels
// take no other); fails like BE_CHECK. An expression, so it also works where a
// statement would not.
#define BE_CHECK_CSR_INDICES_INT32(tensor)                                          \
    ::BE::detail::check_csr_indices_int32((tensor).dtype(), __FILE__, __LINE__,     \
        "BE_CHECK_CSR_INDICES_INT32(" #tensor ") failed")
// clang-format on
