// BE::DType: the element types a BE::Tensor can hold.
#pragma once

#include "brainevent/config.h"

namespace BE {

// The numeric values are part of the brainevent kernel API (kernels may store
// or compare them), so they never change.
enum class DType : uint8_t {
    Float16 = 0,
    Float32 = 1,
    Float64 = 2,
    BFloat16 = 3,
    Int8 = 4,
    Int16 = 5,
    Int32 = 6,
    Int64 = 7,
    UInt8 = 8,
    UInt16 = 9,
    UInt32 = 10,
    UInt64 = 11,
    Bool = 12,
    Complex64 = 13,
    Complex128 = 14,
    Invalid = 255,
};

// Bytes per element; 0 for Invalid and for values outside the enum.
BE_HOST_DEVICE constexpr size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::Bool:
        case DType::Int8:
        case DType::UInt8:
            return 1;
        case DType::Float16:
        case DType::BFloat16:
        case DType::Int16:
        case DType::UInt16:
            return 2;
        case DType::Float32:
        case DType::Int32:
        case DType::UInt32:
            return 4;
        case DType::Float64:
        case DType::Int64:
        case DType::UInt64:
        case DType::Complex64:
            return 8;
        case DType::Complex128:
            return 16;
        case DType::Invalid:
            return 0;
    }
    return 0;
}

// The NumPy/JAX spelling ("float32", "bfloat16", "bool"), so messages name
// dtypes the way the Python caller wrote them.
BE_HOST_DEVICE constexpr const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::Float16:
            return "float16";
        case DType::Float32:
            return "float32";
        case DType::Float64:
            return "float64";
        case DType::BFloat16:
            return "bfloat16";
        case DType::Int8:
            return "int8";
        case DType::Int16:
            return "int16";
        case DType::Int32:
            return "int32";
        case DType::Int64:
            return "int64";
        case DType::UInt8:
            return "uint8";
        case DType::UInt16:
            return "uint16";
        case DType::UInt32:
            return "uint32";
        case DType::UInt64:
            return "uint64";
        case DType::Bool:
            return "bool";
        case DType::Complex64:
            return "complex64";
        case DType::Complex128:
            return "complex128";
        case DType::Invalid:
            return "invalid";
    }
    return "unknown";
}

}  // namespace BE
