// fill_scalar_types.cu -- constant fills and affine quantisation.
//
// One entry point per scalar type, so every attribute type that can be
// inferred from a C++ signature appears here at least once, spelled both as
// a fixed-width typedef and as the builtin keyword.

#include <cuda_runtime.h>
#include <cstdint>
#include "brainevent/common.h"

template <typename T>
__global__ void fill_kernel(T* __restrict__ out, int64_t n, T value) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = value;
}

template <typename T>
static void fill(BE::Tensor& out, T value, int64_t stream) {
    BE_CHECK(out.element_size() == sizeof(T))
        << "fill: output dtype " << BE::dtype_name(out.dtype()) << " does not match value";
    fill_kernel<T><<<120, 256, 0, (cudaStream_t)stream>>>(
        static_cast<T*>(out.data_ptr()), out.numel(), value);
    BE_CHECK_KERNEL_LAUNCH();
}

// @BE fill_bool
void fill_bool(BE::Tensor out, bool value, int64_t stream) { fill(out, value, stream); }
// @BE fill_i8
void fill_i8(BE::Tensor out, int8_t value, int64_t stream) { fill(out, value, stream); }
// @BE fill_char
void fill_char(BE::Tensor out, char value, int64_t stream) { fill(out, value, stream); }
// @BE fill_u8
void fill_u8(BE::Tensor out, uint8_t value, int64_t stream) { fill(out, value, stream); }
// @BE fill_uchar
void fill_uchar(BE::Tensor out, unsigned char value, int64_t stream) { fill(out, value, stream); }
// @BE fill_i16
void fill_i16(BE::Tensor out, int16_t value, int64_t stream) { fill(out, value, stream); }
// @BE fill_short
void fill_short(BE::Tensor out, short value, int64_t stream) { fill(out, value, stream); }
// @BE fill_u16
void fill_u16(BE::Tensor out, uint16_t value, int64_t stream) { fill(out, value, stream); }
// @BE fill_ushort
void fill_ushort(BE::Tensor out, unsigned short value, int64_t stream) { fill(out, value, stream); }
// @BE fill_i32
void fill_i32(BE::Tensor out, int32_t value, int64_t stream) { fill(out, value, stream); }
// @BE fill_int
void fill_int(BE::Tensor out, int value, int64_t stream) { fill(out, value, stream); }
// @BE fill_u32
void fill_u32(BE::Tensor out, uint32_t value, int64_t stream) { fill(out, value, stream); }
// @BE fill_uint
void fill_uint(BE::Tensor out, unsigned int value, int64_t stream) { fill(out, value, stream); }
// @BE fill_i64
void fill_i64(BE::Tensor out, int64_t value, int64_t stream) { fill(out, value, stream); }
// @BE fill_longlong
void fill_longlong(BE::Tensor out, long long value, int64_t stream) { fill(out, value, stream); }
// @BE fill_u64
void fill_u64(BE::Tensor out, uint64_t value, int64_t stream) { fill(out, value, stream); }
// @BE fill_ulonglong
void fill_ulonglong(BE::Tensor out, unsigned long long value, int64_t stream) {
    fill(out, value, stream);
}
// @BE fill_f32
void fill_f32(BE::Tensor out, float value, int64_t stream) { fill(out, value, stream); }
// @BE fill_f64
void fill_f64(BE::Tensor out, double value, int64_t stream) { fill(out, value, stream); }

// ---------------------------------------------------------------------------
// Affine quantisation: q = clamp(round(x / scale) + zero_point, qmin, qmax).
// Every scalar parameter carries a leading const, which inference ignores.

__global__ void quantize_kernel(const float* __restrict__ x, uint8_t* __restrict__ q,
                                int64_t n, float scale, int32_t zero_point,
                                uint8_t qmin, uint8_t qmax) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = __float2int_rn(x[i] / scale) + zero_point;
    v = v < qmin ? qmin : (v > qmax ? qmax : v);
    q[i] = static_cast<uint8_t>(v);
}

// @BE quantize_u8
void quantize_u8(const BE::Tensor x, BE::Tensor q,
                 const float scale, const int32_t zero_point,
                 const uint8_t qmin, const unsigned char qmax,
                 int64_t stream) {
    const int64_t n = x.numel();
    quantize_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), q.data_ptr<uint8_t>(), n, scale, zero_point, qmin, qmax);
    BE_CHECK_KERNEL_LAUNCH();
}

// A kitchen-sink signature with one const parameter of each remaining kind.
// @BE quantize_config_probe
void quantize_config_probe(const BE::Tensor x, BE::Tensor out,
                           const bool symmetric, const char bits,
                           const int8_t i8, const int16_t i16, const short s16,
                           const uint16_t u16, const unsigned short us16,
                           const int lanes, const uint32_t u32, const unsigned int ui32,
                           const int64_t seed, const long long ll,
                           const uint64_t u64, const unsigned long long ull,
                           const double momentum,
                           int64_t stream) {
    (void)symmetric; (void)bits; (void)i8; (void)i16; (void)s16; (void)u16; (void)us16;
    (void)lanes; (void)u32; (void)ui32; (void)seed; (void)ll; (void)u64; (void)ull;
    (void)momentum;
    BE_CUDA_CHECK(cudaMemcpyAsync(out.data_ptr(), x.data_ptr(), x.nbytes(),
                                  cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
}
