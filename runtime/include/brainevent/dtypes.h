// XLA's element types as BE::DType: BE::xla_to_jkb_dtype (brainevent's name).
//
// For code written against XLA's C++ FFI API ("xla/ffi/api/ffi.h", shipped in
// jaxlib's include directory), such as FFI handlers written by hand. It needs
// that header on the include path (-I <jaxlib>/include); brainevent/common.h
// does not include this file, and bekc's own handlers never use it (they speak
// the C ABI through bekc/xla_ffi_abi.h).
#pragma once

#include "brainevent/tensor.h"
#include "xla/ffi/api/ffi.h"

namespace BE {

// The BE::DType holding the same values as XLA's `dt`. Types BE::DType has no
// name for (tokens, the 8-, 4-, 2- and 1-bit types) give DType::Invalid, whose
// size is 0: check for it before building a Tensor.
constexpr DType xla_to_jkb_dtype(xla::ffi::DataType dt) noexcept {
    switch (dt) {
        case xla::ffi::DataType::PRED:
            return DType::Bool;
        case xla::ffi::DataType::S8:
            return DType::Int8;
        case xla::ffi::DataType::S16:
            return DType::Int16;
        case xla::ffi::DataType::S32:
            return DType::Int32;
        case xla::ffi::DataType::S64:
            return DType::Int64;
        case xla::ffi::DataType::U8:
            return DType::UInt8;
        case xla::ffi::DataType::U16:
            return DType::UInt16;
        case xla::ffi::DataType::U32:
            return DType::UInt32;
        case xla::ffi::DataType::U64:
            return DType::UInt64;
        case xla::ffi::DataType::F16:
            return DType::Float16;
        case xla::ffi::DataType::BF16:
            return DType::BFloat16;
        case xla::ffi::DataType::F32:
            return DType::Float32;
        case xla::ffi::DataType::F64:
            return DType::Float64;
        case xla::ffi::DataType::C64:
            return DType::Complex64;
        case xla::ffi::DataType::C128:
            return DType::Complex128;
        default:
            return DType::Invalid;
    }
}

}  // namespace BE
