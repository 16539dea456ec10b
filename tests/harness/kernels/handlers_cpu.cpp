// CPU kernels that exercise every part of a generated handler: every attribute
// type, tensors of rank 0 to 8, several outputs, dtype dispatch and every way a
// user function can fail. Built with the real `bekc` by the C++ harness
// (tests/harness/handler_harness.cpp) and by the JAX tests
// (tests/python/test_handlers_jax_cpu.py); both compare exact values, so keep
// the arithmetic below in step with them.
#include <cstring>
#include <stdexcept>

#include "brainevent/common.h"

namespace {

// Copies a scalar's bytes into a 0-d output of the same width.
template <class T>
void put(BE::Tensor out, T value) {
    BE_CHECK(out.element_size() == sizeof(T))
        << "output of " << out.dtype() << " for a " << int(sizeof(T)) << "-byte attribute";
    std::memcpy(out.data_ptr(), &value, sizeof(T));
}

}  // namespace

// Every attribute type narrower than 64 bits, each copied bit for bit into a
// 0-d output of its own dtype (float16/bfloat16 arrive as raw uint16_t bits).
// The attribute names are out of alphabetical order, upper case included, so
// the handler must find each by its position in name order ('Z' < 'a').
// @BE attrs_small arg ret ret ret ret ret ret ret ret ret ret attr.zb:bool attr.Yi8:int8 attr.xu8:uint8 attr.wi16:int16 attr.vu16:uint16 attr.ui32:int32 attr.tu32:uint32 attr.af32:float32 attr.bh:float16 attr.cbh:bfloat16
void attrs_small(const BE::Tensor x, BE::Tensor o_b, BE::Tensor o_i8, BE::Tensor o_u8,
                 BE::Tensor o_i16, BE::Tensor o_u16, BE::Tensor o_i32, BE::Tensor o_u32,
                 BE::Tensor o_f32, BE::Tensor o_f16, BE::Tensor o_bf16, bool zb, int8_t Yi8,
                 uint8_t xu8, int16_t wi16, uint16_t vu16, int32_t ui32, uint32_t tu32,
                 float af32, uint16_t bh, uint16_t cbh) {
    (void)x;
    put(o_b, zb);
    put(o_i8, Yi8);
    put(o_u8, xu8);
    put(o_i16, wi16);
    put(o_u16, vu16);
    put(o_i32, ui32);
    put(o_u32, tu32);
    put(o_f32, af32);
    put(o_f16, bh);
    put(o_bf16, cbh);
}

// The 64-bit attribute types; the spec is inferred from the signature.
// @BE attrs_wide
void attrs_wide(const BE::Tensor x, BE::Tensor o_i64, BE::Tensor o_u64, BE::Tensor o_f64,
                uint64_t mu64, double f64, int64_t i64) {
    (void)x;
    put(o_i64, i64);
    put(o_u64, mu64);
    put(o_f64, f64);
}

// y = a * x + b for a float32 tensor of any rank.
// @BE affine
void affine(const BE::Tensor x, BE::Tensor y, float a, float b) {
    BE_CHECK(x.dtype() == BE::DType::Float32) << "affine takes float32, got " << x.dtype();
    BE_CHECK(y.numel() == x.numel()) << "shape mismatch";
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = a * in[i] + b;
}

// What the handler told BE::Tensor about the input, as 24 integers (int64, or
// int32 for JAX without x64): ndim, numel, dtype, element_size, nbytes,
// is_contiguous, shape[0..8], stride[0..8] (unused dimensions are -1), the
// input's first byte (-1 when empty), and whether data() == data_ptr().
// @BE describe
void describe(const BE::Tensor x, BE::Tensor info) {
    BE_CHECK(info.numel() == 24) << "info must have 24 elements, got " << info.numel();
    int64_t o[24];
    o[0] = x.ndim();
    o[1] = x.numel();
    o[2] = static_cast<int64_t>(x.dtype());
    o[3] = static_cast<int64_t>(x.element_size());
    o[4] = static_cast<int64_t>(x.nbytes());
    o[5] = x.is_contiguous() ? 1 : 0;
    for (int i = 0; i < 8; ++i) {
        o[6 + i] = i < x.ndim() ? x.size(i) : -1;
        o[14 + i] = i < x.ndim() ? x.stride(i) : -1;
    }
    o[22] = x.numel() > 0 ? static_cast<int64_t>(*static_cast<const unsigned char*>(x.data_ptr())) : -1;
    o[23] = (x.data_ptr() == x.data()) ? 1 : 0;
    if (info.dtype() == BE::DType::Int64) {
        for (int i = 0; i < 24; ++i) info.data_ptr<int64_t>()[i] = o[i];
    } else {
        BE_CHECK(info.dtype() == BE::DType::Int32) << "info must be int64 or int32, got " << info.dtype();
        for (int i = 0; i < 24; ++i) info.data_ptr<int32_t>()[i] = static_cast<int32_t>(o[i]);
    }
}

// Several outputs of different shapes from two inputs of the same shape:
// the total of x (0-d), x * w (elementwise) and the row sums of x over its last
// axis (shape of x without the last axis; numel when x is 0-d).
// @BE stats
void stats(const BE::Tensor x, const BE::Tensor w, BE::Tensor total, BE::Tensor prod,
           BE::Tensor row_sums) {
    BE_CHECK(w.numel() == x.numel()) << "x and w differ in size";
    const float* a = x.data_ptr<float>();
    const float* b = w.data_ptr<float>();
    double t = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        t += a[i];
        prod.data_ptr<float>()[i] = a[i] * b[i];
    }
    *total.data_ptr<float>() = static_cast<float>(t);
    int64_t inner = x.ndim() > 0 ? x.size(-1) : 1;
    int64_t rows = inner > 0 ? x.numel() / inner : 0;
    for (int64_t r = 0; r < rows; ++r) {
        float s = 0;
        for (int64_t j = 0; j < inner; ++j) s += a[r * inner + j];
        row_sums.data_ptr<float>()[r] = s;
    }
}

// out = alpha * x + y for float32 or float64 (BE_DISPATCH_FLOATING).
// @BE axpy
void axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, double alpha) {
    BE_DISPATCH_FLOATING(x.dtype(), scalar_t, {
        const scalar_t* a = x.data_ptr<scalar_t>();
        const scalar_t* b = y.data_ptr<scalar_t>();
        scalar_t* o = out.data_ptr<scalar_t>();
        for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<scalar_t>(alpha) * a[i] + b[i];
    });
}

// out = 3 * a - 1 in the input's own integer type (BE_DISPATCH_INTEGRAL).
// @BE int_affine
void int_affine(const BE::Tensor a, BE::Tensor out) {
    BE_DISPATCH_INTEGRAL(a.dtype(), scalar_t, {
        const scalar_t* in = a.data_ptr<scalar_t>();
        scalar_t* o = out.data_ptr<scalar_t>();
        for (int64_t i = 0; i < a.numel(); ++i)
            o[i] = static_cast<scalar_t>(static_cast<scalar_t>(3) * in[i] - static_cast<scalar_t>(1));
    });
}

// y = x * n, but n must be positive: the failing BE_CHECK is what the tests want.
// @BE checked
void checked(const BE::Tensor x, BE::Tensor y, int32_t n) {
    BE_CHECK(n > 0) << "n must be positive, got " << n;
    for (int64_t i = 0; i < x.numel(); ++i) y.data_ptr<float>()[i] = x.data_ptr<float>()[i] * n;
}

// @BE throws_std
void throws_std(const BE::Tensor x, BE::Tensor y) {
    (void)x;
    (void)y;
    throw std::runtime_error("a plain std::runtime_error");
}

// @BE throws_int
void throws_int(const BE::Tensor x, BE::Tensor y) {
    (void)x;
    (void)y;
    throw 42;
}

// A function the user does not export: it must not appear in the library's
// dynamic symbol table.
void not_exported_helper(BE::Tensor t) { (void)t; }
