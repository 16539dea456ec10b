"""Issue 28 in Python: what brainevent accepts works the same way through bekc."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import bekc

SCALE = """
#include "brainevent/common.h"
// @BE scale arg ret attr.factor:float32
void scale(const BE::Tensor x, BE::Tensor out, float factor) {
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * factor;
}
"""


def test_load_cpp_inline_takes_a_module_name_with_a_dash(bekc_bin):
    jax = pytest.importorskip("jax")
    name = f"my-kernels-{uuid.uuid4().hex[:8]}"
    mod = bekc.load_cpp_inline(name=name, cpp_sources=SCALE)
    assert list(mod.targets) == [f"{name}.scale"]
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(jax.jit(lambda v: mod.scale(v, factor=2.0))(x), 2 * x)
    # The target is registered under the name as written, for raw ffi_call users.
    y = jax.ffi.ffi_call(f"{name}.scale", jax.ShapeDtypeStruct(x.shape, x.dtype))(
        x, factor=np.float32(3.0))
    np.testing.assert_allclose(y, 3 * x)
