// Reference XLA FFI handlers written against jaxlib's own xla/ffi/api/ffi.h.
// The Python loader tests compile this with the host compiler and describe it
// with a hand-written manifest, so they exercise bekc.load, registration and
// attribute casting without the bekc binary. REF_VARIANT changes the library
// bytes (and ref_add's result) for the conflicting-registration tests.
#include <cstdint>
#include <cstring>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// float16 / bfloat16 attributes travel as U16 scalars holding the raw bits:
// XLA's FFI attribute conversion accepts only 32- and 64-bit float scalars.

#ifndef REF_VARIANT
#define REF_VARIANT 1
#endif

static ffi::Error AddImpl(ffi::AnyBuffer a, ffi::AnyBuffer b, ffi::Result<ffi::AnyBuffer> out) {
  const float* x = static_cast<const float*>(a.untyped_data());
  const float* y = static_cast<const float*>(b.untyped_data());
  float* o = static_cast<float*>(out->untyped_data());
  for (size_t i = 0; i < a.element_count(); ++i) o[i] = x[i] + REF_VARIANT * y[i];
  return ffi::Error::Success();
}

static ffi::Error ScaleImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> out, float scale) {
  const float* in = static_cast<const float*>(x.untyped_data());
  float* o = static_cast<float*>(out->untyped_data());
  for (size_t i = 0; i < x.element_count(); ++i) o[i] = in[i] * scale;
  return ffi::Error::Success();
}

static ffi::Error TwoOutImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> plus1,
                             ffi::Result<ffi::AnyBuffer> times2) {
  const float* in = static_cast<const float*>(x.untyped_data());
  float* p = static_cast<float*>(plus1->untyped_data());
  float* t = static_cast<float*>(times2->untyped_data());
  for (size_t i = 0; i < x.element_count(); ++i) { p[i] = in[i] + 1.0f; t[i] = in[i] * 2.0f; }
  return ffi::Error::Success();
}

// Writes the 64-bit pattern of every attribute as two uint32 words (lo, hi).
static void put(uint32_t* o, int i, uint64_t v) {
  o[2 * i] = static_cast<uint32_t>(v);
  o[2 * i + 1] = static_cast<uint32_t>(v >> 32);
}
static uint64_t dbits(double d) { uint64_t u; std::memcpy(&u, &d, 8); return u; }

static ffi::Error AttrsImpl(ffi::AnyBuffer, ffi::Result<ffi::AnyBuffer> out, bool b, int8_t i8,
                            uint8_t u8, int16_t i16, uint16_t u16, int32_t i32, uint32_t u32,
                            int64_t i64, uint64_t u64, float f32, double f64, uint16_t h,
                            uint16_t bh) {
  uint32_t* o = static_cast<uint32_t*>(out->untyped_data());
  put(o, 0, b ? 1 : 0);
  put(o, 1, static_cast<uint64_t>(static_cast<int64_t>(i8)));
  put(o, 2, u8);
  put(o, 3, static_cast<uint64_t>(static_cast<int64_t>(i16)));
  put(o, 4, u16);
  put(o, 5, static_cast<uint64_t>(static_cast<int64_t>(i32)));
  put(o, 6, u32);
  put(o, 7, static_cast<uint64_t>(i64));
  put(o, 8, u64);
  put(o, 9, dbits(static_cast<double>(f32)));
  put(o, 10, dbits(f64));
  put(o, 11, h);
  put(o, 12, bh);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(bekc_ffi_ref_add, AddImpl,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(bekc_ffi_ref_scale, ScaleImpl,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<float>("scale"));
XLA_FFI_DEFINE_HANDLER_SYMBOL(bekc_ffi_ref_two_out, TwoOutImpl,
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());
XLA_FFI_DEFINE_HANDLER_SYMBOL(bekc_ffi_ref_attrs, AttrsImpl,
    ffi::Ffi::Bind()
        .Arg<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Attr<bool>("b")
        .Attr<int8_t>("i8")
        .Attr<uint8_t>("u8")
        .Attr<int16_t>("i16")
        .Attr<uint16_t>("u16")
        .Attr<int32_t>("i32")
        .Attr<uint32_t>("u32")
        .Attr<int64_t>("i64")
        .Attr<uint64_t>("u64")
        .Attr<float>("f32")
        .Attr<double>("f64")
        .Attr<uint16_t>("h")
        .Attr<uint16_t>("bh"));
