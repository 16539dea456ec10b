// The device-code half of BE_CHECK (see check.h): a failed check in a kernel
// formats its message, prints one line, and traps.
//
// Device code has no iostreams and no snprintf, so the few value kinds a check
// message needs (text, integers, floats, pointers, dtypes) are formatted by
// hand. Two costs are avoided on purpose:
//  - code size: the formatting lives in out-of-line functions, so a passing
//    check costs the kernel one compare and branch;
//  - stack: the builder is a handful of scalars the compiler keeps in
//    registers, and the text goes to a buffer from the device heap, taken only
//    once a check has failed. A buffer inside the builder would give every
//    check site its own stack slot, and the driver reserves a kernel's stack
//    for every thread the GPU can hold.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "brainevent/config.h"
#include "brainevent/dtype.h"

namespace BE::detail {

constexpr int kDeviceMessageCapacity = 160;

// Appends `s` to the NUL-terminated `text` of length `len`; returns the new
// length. A null `text` (heap exhausted) swallows everything.
__device__ __noinline__ inline int device_append(char* text, int len, const char* s) {
    if (text == nullptr) return len;
    while (s != nullptr && *s != '\0' && len + 1 < kDeviceMessageCapacity) text[len++] = *s++;
    text[len] = '\0';
    return len;
}

__device__ __noinline__ inline int device_append_unsigned(char* text, int len, unsigned long long v,
                                                          unsigned base, bool negative) {
    char digits[24];
    int n = 23;
    digits[n] = '\0';
    do {
        digits[--n] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v != 0);
    if (negative) digits[--n] = '-';
    return device_append(text, len, digits + n);
}

__device__ inline int device_append_signed(char* text, int len, long long v) {
    unsigned long long magnitude = v < 0 ? 0ull - static_cast<unsigned long long>(v) : v;
    return device_append_unsigned(text, len, magnitude, 10, v < 0);
}

// Six decimals, switching to an exponent outside [1e-4, 1e15) so the digits fit
// in an unsigned long long; enough to read a value in a crash message.
__device__ __noinline__ inline int device_append_float(char* text, int len, double v) {
    if (v != v) return device_append(text, len, "nan");
    if (v < 0) {
        len = device_append(text, len, "-");
        v = -v;
    }
    if (v > 1.7976931348623157e308) return device_append(text, len, "inf");
    int exp10 = 0;
    if (v != 0 && (v >= 1e15 || v < 1e-4)) {
        while (v >= 10) v /= 10, ++exp10;
        while (v < 1) v *= 10, --exp10;
    }
    unsigned long long whole = static_cast<unsigned long long>(v);
    unsigned long long frac = static_cast<unsigned long long>((v - whole) * 1e6 + 0.5);
    if (frac >= 1000000) whole += 1, frac -= 1000000;
    len = device_append_unsigned(text, len, whole, 10, false);
    char decimals[8] = {'.'};
    for (int i = 6; i >= 1; --i, frac /= 10) decimals[i] = static_cast<char>('0' + frac % 10);
    len = device_append(text, len, decimals);
    if (exp10 != 0) {
        len = device_append(text, len, "e");
        len = device_append_signed(text, len, exp10);
    }
    return len;
}

__device__ __noinline__ inline char* device_message_buffer() {
    char* text = static_cast<char*>(malloc(kDeviceMessageCapacity));
    if (text != nullptr) text[0] = '\0';
    return text;
}

[[noreturn]] __device__ __noinline__ inline void device_raise(const char* file, int line,
                                                              const char* summary,
                                                              const char* text) {
    printf("%s:%d: %s%s [block (%u,%u,%u), thread (%u,%u,%u)]\n", file, line, summary,
           text != nullptr ? text : "", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
           threadIdx.y, threadIdx.z);
    __trap();
    __builtin_unreachable();
}

class DeviceErrorBuilder {
  public:
    __device__ DeviceErrorBuilder(const char* file, int line, const char* summary,
                                  int cuda_status = -1)
        : file_(file), line_(line), summary_(summary), text_(device_message_buffer()) {
        if (cuda_status >= 0) {
            len_ = device_append(text_, len_, " with CUDA error ");
            len_ = device_append_signed(text_, len_, cuda_status);
        }
    }

    template <class T>
    __device__ DeviceErrorBuilder& operator<<(const T& value) {
        if (!has_user_text_) {
            has_user_text_ = true;
            len_ = device_append(text_, len_, ": ");
        }
        if constexpr (std::is_same_v<T, bool>) {
            len_ = device_append(text_, len_, value ? "true" : "false");
        } else if constexpr (std::is_same_v<T, char>) {
            const char s[2] = {value, '\0'};
            len_ = device_append(text_, len_, s);
        } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
            len_ = device_append_signed(text_, len_, value);
        } else if constexpr (std::is_integral_v<T>) {
            len_ = device_append_unsigned(text_, len_, value, 10, false);
        } else if constexpr (std::is_same_v<T, DType>) {
            len_ = device_append(text_, len_, dtype_name(value));
        } else if constexpr (std::is_enum_v<T>) {
            len_ = device_append_signed(text_, len_, static_cast<long long>(value));
        } else if constexpr (std::is_floating_point_v<T>) {
            len_ = device_append_float(text_, len_, static_cast<double>(value));
        } else if constexpr (std::is_convertible_v<const T&, const char*>) {
            len_ = device_append(text_, len_, value);
        } else if constexpr (std::is_pointer_v<T>) {
            len_ = device_append(text_, len_, "0x");
            len_ = device_append_unsigned(text_, len_, reinterpret_cast<unsigned long long>(value),
                                          16, false);
        } else {
            // Host-only types (std::string, ...) can appear in host functions that
            // nvcc parses during the device pass; they must compile, never run here.
            len_ = device_append(text_, len_, "<?>");
        }
        return *this;
    }

    [[noreturn]] __device__ void raise() const { device_raise(file_, line_, summary_, text_); }

  private:
    const char* file_;
    int line_;
    const char* summary_;  // "BE_CHECK(i < n) failed", a string literal
    char* text_;           // device heap; null if the heap is exhausted
    int len_ = 0;
    bool has_user_text_ = false;
};

struct DeviceRaise {
    [[noreturn]] __device__ void operator&(const DeviceErrorBuilder& builder) const {
        builder.raise();
    }
};

}  // namespace BE::detail
