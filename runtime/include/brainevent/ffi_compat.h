// XLA FFI buffers as BE::Tensor: BE::internal::buffer_to_tensor and
// result_buffer_to_tensor (brainevent's names).
//
// Like dtypes.h, for code written against XLA's C++ FFI API; it needs
// "xla/ffi/api/ffi.h" on the include path (-I <jaxlib>/include), and
// brainevent/common.h does not include it.
#pragma once

#include <stdexcept>
#include <string>

#include "brainevent/dtypes.h"
#include "brainevent/tensor.h"
#include "xla/ffi/api/ffi.h"

// A handler compiled by nvcc names cudaStream_t even when the kernel file did
// not include the CUDA runtime API itself.
#ifdef __CUDACC__
#include <cuda_runtime_api.h>
#endif

namespace BE::internal {

// A dense row-major view of an XLA buffer. Throws std::invalid_argument for
// an element type BE::DType cannot name (xla_to_jkb_dtype gives Invalid): a
// Tensor of element size 0 would go wrong silently. A rank above kMaxDim
// throws std::out_of_range.
inline Tensor buffer_to_tensor(xla::ffi::AnyBuffer buffer) {
    const DType dtype = xla_to_jkb_dtype(buffer.element_type());
    if (dtype == DType::Invalid)
        throw std::invalid_argument("BE::Tensor cannot view an XLA buffer of element type " +
                                    std::to_string(static_cast<int>(buffer.element_type())) +
                                    " (xla::ffi::DataType): BE::DType has no name for it");
    const auto dims = buffer.dimensions();
    return Tensor(buffer.untyped_data(), dims.begin(), static_cast<int>(dims.size()), dtype);
}

// The same for an output buffer.
inline Tensor result_buffer_to_tensor(xla::ffi::Result<xla::ffi::AnyBuffer> result) {
    return buffer_to_tensor(*result);
}

}  // namespace BE::internal
