// BE::Tensor: a non-owning view of one XLA buffer.
//
// The generated handler builds one per `arg`/`ret` from XLA's buffer descriptor
// and passes it by value to the user function; the user may pass it on, by
// value, into a __global__ kernel. So it is trivially copyable, holds its shape
// and strides inline (no pointer back into XLA's call frame, which the device
// cannot read), and every accessor works in host and device code.
#pragma once

#include <climits>
#include <stdexcept>
#include <string>

#include "brainevent/check.h"
#include "brainevent/config.h"
#include "brainevent/dtype.h"

namespace BE {

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

    // The same view without the checks, for bekc's handlers: they have
    // checked the rank against kMaxDims already, and XLA's dimensions are
    // never negative. It keeps the checks' message formatting out of every
    // wrapper translation unit, which costs compile time (docs/benchmarks.md).
    struct Unchecked {};
    BE_HOST_DEVICE Tensor(Unchecked, void* data, DType dtype, int ndim, const int64_t* dims)
        : data_(data), ndim_(ndim), dtype_(dtype) {
        set_shape(dims);
    }

    BE_HOST_DEVICE void* data_ptr() const { return data_; }
    // Unchecked: kernels legitimately view a buffer as another type of the
    // same width (float16 bits as uint16_t, bool as uint8_t).
    template <class T>
    BE_HOST_DEVICE T* data_ptr() const {
        return static_cast<T*>(data_);
    }
    BE_HOST_DEVICE void* data() const { return data_; }

    BE_HOST_DEVICE int ndim() const { return ndim_; }
    BE_HOST_DEVICE DType dtype() const { return dtype_; }

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
};

}  // namespace BE
