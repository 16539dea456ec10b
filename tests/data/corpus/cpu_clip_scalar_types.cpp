// cpu_clip_scalar_types.cpp -- clip / offset kernels for every integer and
// floating dtype, on the host.
//
// BE_DEFINE_CPU_CLIP is instantiated with builtin keyword spellings (some of
// them two words long, e.g. `unsigned short`) and declares its bounds as
// `const T`; the hand-written offset functions use fixed-width typedefs.

#include <algorithm>
#include <cstdint>
#include "brainevent/common.h"

template <typename T>
static void clip_impl(const BE::Tensor& x, BE::Tensor& out, T lo, T hi) {
    BE_CHECK(x.element_size() == sizeof(T)) << "clip: wrong dtype "
                                            << BE::dtype_name(x.dtype());
    const T* xp = static_cast<const T*>(x.data_ptr());
    T* op = static_cast<T*>(out.data_ptr());
    for (int64_t i = 0, n = x.numel(); i < n; ++i) op[i] = std::min(std::max(xp[i], lo), hi);
}

#define BE_DEFINE_CPU_CLIP(SUFFIX, T)                                          \
    void cpu_clip##SUFFIX(const BE::Tensor x,                                  \
                          BE::Tensor out,                                      \
                          const T lo,                                          \
                          const T hi) {                                        \
        clip_impl<T>(x, out, lo, hi);                                          \
    }

// @BE cpu_clip_bool
BE_DEFINE_CPU_CLIP(_bool, bool)
// @BE cpu_clip_char
BE_DEFINE_CPU_CLIP(_char, char)
// @BE cpu_clip_uchar
BE_DEFINE_CPU_CLIP(_uchar, unsigned char)
// @BE cpu_clip_short
BE_DEFINE_CPU_CLIP(_short, short)
// @BE cpu_clip_ushort
BE_DEFINE_CPU_CLIP(_ushort, unsigned short)
// @BE cpu_clip_int
BE_DEFINE_CPU_CLIP(_int, int)
// @BE cpu_clip_uint
BE_DEFINE_CPU_CLIP(_uint, unsigned int)
// @BE cpu_clip_longlong
BE_DEFINE_CPU_CLIP(_longlong, long long)
// @BE cpu_clip_ulonglong
BE_DEFINE_CPU_CLIP(_ulonglong, unsigned long long)
// @BE cpu_clip_float
BE_DEFINE_CPU_CLIP(_float, float)
// @BE cpu_clip_double
BE_DEFINE_CPU_CLIP(_double, double)

template <typename T>
static void offset_impl(const BE::Tensor& x, BE::Tensor& out, T delta) {
    const T* xp = static_cast<const T*>(x.data_ptr());
    T* op = static_cast<T*>(out.data_ptr());
    for (int64_t i = 0, n = x.numel(); i < n; ++i) op[i] = static_cast<T>(xp[i] + delta);
}

// @BE cpu_offset_i8
void cpu_offset_i8(const BE::Tensor x, BE::Tensor out, int8_t delta) { offset_impl(x, out, delta); }
// @BE cpu_offset_u8
void cpu_offset_u8(const BE::Tensor x, BE::Tensor out, uint8_t delta) { offset_impl(x, out, delta); }
// @BE cpu_offset_i16
void cpu_offset_i16(const BE::Tensor x, BE::Tensor out, int16_t delta) { offset_impl(x, out, delta); }
// @BE cpu_offset_u16
void cpu_offset_u16(const BE::Tensor x, BE::Tensor out, uint16_t delta) { offset_impl(x, out, delta); }
// @BE cpu_offset_i32
void cpu_offset_i32(const BE::Tensor x, BE::Tensor out, int32_t delta) { offset_impl(x, out, delta); }
// @BE cpu_offset_u32
void cpu_offset_u32(const BE::Tensor x, BE::Tensor out, uint32_t delta) { offset_impl(x, out, delta); }
// @BE cpu_offset_i64
void cpu_offset_i64(const BE::Tensor x, BE::Tensor out, int64_t delta) { offset_impl(x, out, delta); }
// @BE cpu_offset_u64
void cpu_offset_u64(const BE::Tensor x, BE::Tensor out, uint64_t delta) { offset_impl(x, out, delta); }

// Explicit float16 / bfloat16 attributes arrive as raw uint16_t bits.
// @BE cpu_offset_f16 arg ret attr.delta:float16
void cpu_offset_f16(const BE::Tensor x, BE::Tensor out, uint16_t delta) {
    (void)delta;  // half arithmetic on the host is done by the caller's epilogue
    offset_impl<uint16_t>(x, out, 0);
}
// @BE cpu_offset_bf16 arg ret attr.delta:bfloat16
void cpu_offset_bf16(const BE::Tensor x, BE::Tensor out, uint16_t delta) {
    (void)delta;
    offset_impl<uint16_t>(x, out, 0);
}
