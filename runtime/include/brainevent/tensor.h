// BE::Tensor: a non-owning view of one XLA buffer.
//
// The generated handler builds one per `arg`/`ret` from XLA's buffer descriptor
// and passes it by value to the user function; the user may pass it on, by
// value, into a __global__ kernel. So it is trivially copyable, holds its shape
// and strides inline (no pointer back into XLA's call frame, which the device
// cannot read), and every accessor works in host and device code.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "brainevent/check.h"
#include "brainevent/config.h"
#include "brainevent/dtype.h"

#if BE_CUDA_COMPILER
// CUDA's half types, declared as dispatch.h declares them: data_ptr<__half>()
// knows their width whether or not <cuda_fp16.h> has defined them.
struct __half;
struct __nv_bfloat16;
#endif

namespace BE {

// Defined in dispatch.h (under nvcc the half types are CUDA's); declared here
// so that data_ptr<T>()'s table below can name them.
struct complex64_t;
struct complex128_t;
#if !BE_CUDA_COMPILER
struct float16_t;
struct bfloat16_t;
#endif

// XLA buffers have at most this many dimensions for a BE kernel; the handler
// reports higher ranks as an error before calling the user. brainevent's name;
// BE::Tensor::kMaxDims is the same number.
inline constexpr int kMaxDim = 8;

namespace detail {

// The rank check of brainevent's constructor order: std::out_of_range on the
// host, as brainevent throws; in device code a trap, like BE_CHECK.
BE_HOST_DEVICE inline void check_rank(int ndim) {
#if BE_DEVICE_CODE
    BE_CHECK(ndim >= 0 && ndim <= kMaxDim) << "BE::Tensor rank out of range: " << ndim;
#else
    if (ndim < 0 || ndim > kMaxDim)
        throw std::out_of_range("BE::Tensor supports 0 to " + std::to_string(kMaxDim) +
                                " dimensions, got " + std::to_string(ndim));
#endif
}

// What data_ptr<T>() knows of its T (cv-qualifiers removed): `width`, the
// element size the tensor's dtype must have, and name(), how its message
// spells T. Width 0 accepts every dtype: the byte views (void, char, unsigned
// char = uint8_t, std::byte) and types not defined yet, whose size is unknown.
template <class T, class = void>
struct ElementView {
    static constexpr size_t width = 0;
    BE_HOST_DEVICE static constexpr const char* name() { return "T"; }
};
template <class T>
struct ElementView<T, std::void_t<decltype(sizeof(T))>> {
    static constexpr size_t width = sizeof(T);
    BE_HOST_DEVICE static constexpr const char* name() { return "T"; }
};

// clang-format off
#define BE_DETAIL_ELEMENT_VIEW_(type, bytes)                                  \
    template <>                                                               \
    struct ElementView<type> {                                                \
        static constexpr size_t width = bytes;                                \
        BE_HOST_DEVICE static constexpr const char* name() { return #type; }  \
    };
BE_DETAIL_ELEMENT_VIEW_(void, 0)
BE_DETAIL_ELEMENT_VIEW_(char, 0)
BE_DETAIL_ELEMENT_VIEW_(unsigned char, 0)
BE_DETAIL_ELEMENT_VIEW_(std::byte, 0)
BE_DETAIL_ELEMENT_VIEW_(bool, 1)
BE_DETAIL_ELEMENT_VIEW_(int8_t, 1)
BE_DETAIL_ELEMENT_VIEW_(int16_t, 2)
BE_DETAIL_ELEMENT_VIEW_(uint16_t, 2)
BE_DETAIL_ELEMENT_VIEW_(int32_t, 4)
BE_DETAIL_ELEMENT_VIEW_(uint32_t, 4)
BE_DETAIL_ELEMENT_VIEW_(int64_t, 8)
BE_DETAIL_ELEMENT_VIEW_(uint64_t, 8)
BE_DETAIL_ELEMENT_VIEW_(float, 4)
BE_DETAIL_ELEMENT_VIEW_(double, 8)
BE_DETAIL_ELEMENT_VIEW_(BE::complex64_t, 8)
BE_DETAIL_ELEMENT_VIEW_(BE::complex128_t, 16)
#if BE_CUDA_COMPILER
BE_DETAIL_ELEMENT_VIEW_(__half, 2)
BE_DETAIL_ELEMENT_VIEW_(__nv_bfloat16, 2)
#else
BE_DETAIL_ELEMENT_VIEW_(BE::float16_t, 2)
BE_DETAIL_ELEMENT_VIEW_(BE::bfloat16_t, 2)
#endif
#undef BE_DETAIL_ELEMENT_VIEW_
// clang-format on

}  // namespace detail

class Tensor {
  public:
    static constexpr int kMaxDims = kMaxDim;

    Tensor() = default;

    // A dense, row-major (C-contiguous) view of `ndim` dimensions `dims`, the
    // layout XLA gives FFI buffers. Strides are in elements.
    BE_HOST_DEVICE Tensor(void* data, DType dtype, int ndim, const int64_t* dims)
        : data_(data), ndim_(ndim), dtype_(dtype) {
        // int{} copies the constant: streaming the member itself would bind a
        // reference to it, which device code cannot do.
        BE_CHECK(ndim >= 0 && ndim <= kMaxDims)
            << "BE::Tensor supports 0 to " << int{kMaxDims} << " dimensions, got " << ndim;
        for (int i = 0; i < ndim; ++i)
            BE_CHECK(dims[i] >= 0) << "dimension " << i << " is negative: " << dims[i];
        set_shape(dims);
    }

    // The same view with brainevent's argument order; a rank outside
    // 0..kMaxDim throws std::out_of_range (see detail::check_rank).
    BE_HOST_DEVICE Tensor(void* data, const int64_t* shape, int ndim, DType dtype)
        : data_(data), ndim_(ndim), dtype_(dtype) {
        detail::check_rank(ndim);
        for (int i = 0; i < ndim; ++i)
            BE_CHECK(shape[i] >= 0) << "dimension " << i << " is negative: " << shape[i];
        set_shape(shape);
    }

    // Which buffer of an XLA call a tensor views. bekc's handlers set it, so
    // that data_ptr<T>()'s error says "argument 0" or "result 1".
    enum class Origin : uint8_t { Unknown = 0, Argument = 1, Result = 2 };

    // The same view without the checks, for bekc's handlers: they have
    // checked the rank against kMaxDims already, and XLA's dimensions are
    // never negative. It keeps the checks' message formatting out of every
    // wrapper translation unit, which costs compile time (docs/benchmarks.md).
    struct Unchecked {};
    BE_HOST_DEVICE Tensor(Unchecked, void* data, DType dtype, int ndim, const int64_t* dims,
                          Origin origin = Origin::Unknown, int index = 0)
        : data_(data),
          ndim_(ndim),
          dtype_(dtype),
          origin_(index >= 0 && index <= 0xFFFF ? origin : Origin::Unknown),
          origin_index_(static_cast<uint16_t>(index)) {
        set_shape(dims);
    }

    BE_HOST_DEVICE void* data_ptr() const { return data_; }
    // The buffer as T*. T must have the dtype's element size (a const T is a
    // T), or be a byte view (void, char, unsigned char, std::byte): a kernel
    // may view float16 bits as uint16_t or bool as uint8_t, but not float32 as
    // double, which would read and write past the buffer. Otherwise it fails
    // like BE_CHECK at the caller's line: on the host a BE::CheckError naming
    // the argument or result, its dtype and T; in device code a trap. A tensor
    // of dtype Invalid (default-constructed) is not checked.
    //
    // The default arguments are the file and line of the caller, so that the
    // error points at the user's code; every compiler bekc drives (g++,
    // clang++, nvcc) has these builtins.
    template <class T>
    BE_HOST_DEVICE T* data_ptr(const char* file = __builtin_FILE(),
                               int line = __builtin_LINE()) const {
        using View = detail::ElementView<std::remove_cv_t<T>>;
        if constexpr (View::width != 0) {
            const size_t have = dtype_size(dtype_);
            if (BE_UNLIKELY(have != View::width && have != 0))
                wrong_view(file, line, View::name(), View::width, dtype_, origin_, origin_index_);
        }
        return static_cast<T*>(data_);
    }
    BE_HOST_DEVICE void* data() const { return data_; }

    BE_HOST_DEVICE int ndim() const { return ndim_; }
    BE_HOST_DEVICE DType dtype() const { return dtype_; }
    // Set by bekc's handlers (Unknown for a tensor built otherwise); the index
    // counts arguments and results apart, from 0.
    BE_HOST_DEVICE Origin origin() const { return origin_; }
    BE_HOST_DEVICE int origin_index() const { return origin_index_; }

    // Dimension `i`; negative `i` counts from the end, as in NumPy.
    BE_HOST_DEVICE int64_t size(int i) const { return shape_[wrap_dim(i)]; }
    BE_HOST_DEVICE int64_t shape(int i) const { return shape_[wrap_dim(i)]; }
    BE_HOST_DEVICE int64_t stride(int i) const { return strides_[wrap_dim(i)]; }
    BE_HOST_DEVICE const int64_t* shape_ptr() const { return shape_; }
    BE_HOST_DEVICE const int64_t* strides_ptr() const { return strides_; }

    BE_HOST_DEVICE size_t element_size() const { return dtype_size(dtype_); }
    // Product of the dimensions: 1 for a rank-0 (scalar) tensor.
    BE_HOST_DEVICE int64_t numel() const { return numel_; }
    BE_HOST_DEVICE size_t nbytes() const { return static_cast<size_t>(numel_) * element_size(); }
    // numel() as an int, for launch arguments; host only. Throws
    // std::overflow_error beyond INT_MAX rather than wrap around.
    int numel_checked_int() const {
        if (numel_ > INT_MAX)
            throw std::overflow_error("BE::Tensor has " + std::to_string(numel_) +
                                      " elements, more than an int holds");
        return static_cast<int>(numel_);
    }

    // True when the strides are the row-major ones for the shape; size-1
    // dimensions may have any stride, as in NumPy and PyTorch.
    BE_HOST_DEVICE bool is_contiguous() const {
        int64_t expected = 1;
        for (int i = ndim_ - 1; i >= 0; --i) {
            if (shape_[i] != 1 && strides_[i] != expected) return false;
            expected *= shape_[i];
        }
        return true;
    }

  private:
    // data_ptr<T>()'s failure, out of line: a passing data_ptr<T>() costs a
    // compare and a branch. It takes values, not `this`, so that the tensor a
    // kernel loops over stays private to it and the check can be hoisted.
    [[noreturn]] __attribute__((noinline, cold)) BE_HOST_DEVICE static void wrong_view(
        const char* file, int line, const char* type, size_t width, DType dtype, Origin origin,
        int index) {
        const char* role = origin == Origin::Argument ? "argument "
                           : origin == Origin::Result ? "result "
                                                      : "a tensor";
        const char* unit = width == 1 ? " byte, " : " bytes, ";
#if BE_DEVICE_CODE
        detail::DeviceErrorBuilder message(file, line, "element size mismatch");
        message << "data_ptr<" << type << ">() on " << role;
        if (origin != Origin::Unknown) message << index;
        detail::DeviceRaise{} & message << " (" << dtype << "): " << type << " has " << width
                                        << unit << dtype << " elements have " << dtype_size(dtype);
#else
        // The text by snprintf, thrown through BE_CHECK's own ErrorBuilder: a
        // kernel that has a BE_CHECK or a dispatch already compiles that, so
        // this failure path adds little to its compile time.
        char number[16] = "";
        if (origin != Origin::Unknown) std::snprintf(number, sizeof number, "%d", index);
        char text[256];
        std::snprintf(text, sizeof text,
                      "data_ptr<%s>() on %s%s (%s): %s has %zu%s%s elements have %zu; check the "
                      "dtype first, or dispatch on it (BE_DISPATCH_*)",
                      type, role, number, dtype_name(dtype), type, width, unit, dtype_name(dtype),
                      dtype_size(dtype));
        detail::ErrorBuilder(file, line, text).raise();
#endif
    }

    BE_HOST_DEVICE void set_shape(const int64_t* dims) {
        int64_t stride = 1;
        for (int i = ndim_ - 1; i >= 0; --i) {
            shape_[i] = dims[i];
            strides_[i] = stride;
            stride *= dims[i];
        }
        numel_ = stride;
    }

    BE_HOST_DEVICE int wrap_dim(int i) const {
        int d = i < 0 ? i + ndim_ : i;
        BE_CHECK(d >= 0 && d < ndim_)
            << "dimension index " << i << " out of range for a tensor of rank " << ndim_;
        return d;
    }

    void* data_ = nullptr;
    int64_t shape_[kMaxDims] = {};
    int64_t strides_[kMaxDims] = {};
    int64_t numel_ = 1;
    int ndim_ = 0;
    DType dtype_ = DType::Invalid;
    // In what was padding after dtype_: a Tensor is as large as before.
    Origin origin_ = Origin::Unknown;
    uint16_t origin_index_ = 0;
};

}  // namespace BE
