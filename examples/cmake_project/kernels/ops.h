// Shared by the kernels of ops.cpp. Editing this header rebuilds the module:
// bekc lists it in the depfile CMake reads.
#pragma once

namespace ops {

// The amount `add_bias` adds to every element.
constexpr float kBias = 1.0f;

}  // namespace ops
