"""Kernel sources the tests build, each named for what it computes.

Tests import these instead of pasting their own copies. A test that needs a
special variant (a missing definition, an extra probe symbol, a header that
must come first) keeps it in its own file under a name that says how it
differs.
"""

from __future__ import annotations

from typing import Sequence

# One export `f` (x -> out) whose body does nothing, without the include: for
# loaders whose argv is recorded and never compiled, and for sources that add
# their own first lines.
NOOP_EXPORT = "// @BE f\nvoid f(const BE::Tensor x, BE::Tensor out) {}\n"

# NOOP_EXPORT as a file bekc can build: the annotation is on line 2.
NOOP_CPP = '#include "brainevent/common.h"\n' + NOOP_EXPORT

# out = x + y, elementwise on float32 (a C++ kernel: `vector_add(a, b) -> out`).
VECTOR_ADD_CPP = r"""
#include "brainevent/common.h"

// @BE vector_add
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    const float* x = static_cast<const float*>(a.data_ptr());
    const float* y = static_cast<const float*>(b.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < a.numel(); ++i) o[i] = x[i] + y[i];
}
"""

# out = x * factor on float32, with `factor` a float32 attribute (a C++ kernel:
# `scale(x, factor=...) -> out`).
SCALE_CPP = r"""
#include "brainevent/common.h"

// @BE scale arg ret attr.factor:float32
void scale(const BE::Tensor x, BE::Tensor out, float factor) {
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * factor;
}
"""

# out = x + VALUE on float32, as C++; fields: fn (the export), includes (lines
# after brainevent/common.h), value (a C++ float literal), extra (code at the end).
ADD_VALUE_CPP_TEMPLATE = """\
#include "brainevent/common.h"
{includes}
// @BE {fn}
void {fn}(const BE::Tensor x, BE::Tensor out) {{
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + {value};
}}
{extra}
"""

# The same as a CUDA kernel launched on XLA's stream; the same fields.
ADD_VALUE_CU_TEMPLATE = """\
#include "brainevent/common.h"
{includes}
__global__ void {fn}_kernel(const float* in, float* out, int64_t n) {{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + {value};
}}

// @BE {fn}
void {fn}(const BE::Tensor x, BE::Tensor out, int64_t stream) {{
    int64_t n = x.numel();
    {fn}_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), n);
}}
{extra}
"""


def _include_lines(includes: Sequence[str]) -> str:
    return "\n".join(f'#include "{h}"' for h in includes)


def add_value_cpp(fn: str = "add_one", includes: Sequence[str] = (), value: str = "1.0f",
                  extra: str = "") -> str:
    """ADD_VALUE_CPP_TEMPLATE filled in: export `fn`, out = x + value."""
    return ADD_VALUE_CPP_TEMPLATE.format(fn=fn, includes=_include_lines(includes), value=value,
                                         extra=extra)


def add_value_cu(fn: str = "add_one_gpu", includes: Sequence[str] = (), value: str = "1.0f",
                 extra: str = "") -> str:
    """ADD_VALUE_CU_TEMPLATE filled in: export `fn`, out = x + value on the GPU."""
    return ADD_VALUE_CU_TEMPLATE.format(fn=fn, includes=_include_lines(includes), value=value,
                                        extra=extra)


# y = x * SCALE + bias on float32 (`scale(x) -> y`), with SCALE from the
# header scale.h beside it, and the kernel and `bias` in an anonymous
# namespace: their device names carry the module id nvcc derives from the
# source's path (tests of nvcc's phases, plan/nvcc_phases).
SCALE_ANONYMOUS_CU = r"""#include "brainevent/common.h"
#include "scale.h"
namespace {
__device__ float bias = 1.0f;
__global__ void scale_kernel(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * SCALE + bias;
}
}  // namespace
// @BE scale
void scale(const BE::Tensor x, BE::Tensor y, int64_t stream) {
    int64_t n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(x.data_ptr()), static_cast<float*>(y.data_ptr()), n);
}
"""

# SCALE_ANONYMOUS_CU with nothing of internal linkage, so its device code does
# not depend on where it is compiled.
SCALE_PLAIN_CU = (SCALE_ANONYMOUS_CU.replace("namespace {\n", "")
                  .replace("}  // namespace\n", "")
                  .replace("__device__ float bias", "__device__ float scale_bias")
                  .replace("+ bias;", "+ scale_bias;"))

# Relocatable device code: a __device__ function called from one input and
# defined in the other, which only the device link resolves.
RDC_CALLER = """\
#include "brainevent/common.h"
extern __device__ float shift(float x);  // defined in another input
__global__ void shifted_kernel(const float* in, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = shift(in[i]);
}
// @BE shifted
void shifted(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    int64_t n = x.numel();
    shifted_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), n);
}
"""

RDC_CALLEE = """\
#include "brainevent/common.h"
__device__ float shift(float x) { return x + 2.0f; }
// @BE shift_scalar
void shift_scalar(const BE::Tensor x, BE::Tensor out) {}
"""
