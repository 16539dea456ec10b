// The brainevent kernel API: `#include "brainevent/common.h"` is all a kernel
// written for brainevent includes. bekc ships this implementation and puts it
// on the include path of every build, for .cu (nvcc) and .cpp (host compiler)
// sources alike.
//
//   BE::Tensor, BE::kMaxDim                                  (tensor.h)
//   BE::DType, BE::dtype_size, BE::dtype_name                (dtype.h)
//   BE_CHECK, BE_CUDA_CHECK, BE_CHECK_KERNEL_LAUNCH(_SYNC),
//   BE::Error, BE::CheckError, BE::CudaError                 (check.h)
//   BE_DISPATCH_FLOATING, BE_DISPATCH_SIGNED_INDEX, ...      (dispatch.h)
//
// As in brainevent, dtypes.h and ffi_compat.h (XLA's DataType and buffers as
// BE::DType and BE::Tensor) are not included: they need XLA's ffi.h.
#pragma once

#include "brainevent/check.h"
#include "brainevent/config.h"
#include "brainevent/dispatch.h"
#include "brainevent/dtype.h"
#include "brainevent/tensor.h"
