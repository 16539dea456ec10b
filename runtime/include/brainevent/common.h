// The brainevent kernel API: `#include "brainevent/common.h"` is all a kernel
// written for brainevent includes. bekc ships this implementation and puts it
// on the include path of every build, for .cu (nvcc) and .cpp (host compiler)
// sources alike.
//
//   BE::Tensor, BE::DType, BE::dtype_size, BE::dtype_name
//   BE_CHECK, BE_CUDA_CHECK, BE_CHECK_KERNEL_LAUNCH          (check.h)
//   BE_DISPATCH_FLOATING, BE_DISPATCH_INTEGRAL, ...          (dispatch.h)
#pragma once

#include "brainevent/check.h"
#include "brainevent/config.h"
#include "brainevent/dispatch.h"
#include "brainevent/dtype.h"
#include "brainevent/tensor.h"
