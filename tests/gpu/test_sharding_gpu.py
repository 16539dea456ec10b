"""bekc's handlers on several GPUs: under jax.shard_map
(with the default check_vma, a fori_loop through a kernel included), under
jax.pmap, and inside a CUDA graph on each device (command-buffer handlers,
several devices capturing at once). Needs 2 or more GPUs; 4 is the case the
issue names.

    python -m pytest -q tests/gpu/test_sharding_gpu.py
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

import bekc  # noqa: E402

KERNELS = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void scale_kernel(const float* x, float* out, int64_t n, float factor) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] * factor;
}

// @BE scale arg ret attr.factor:float32 stream
void scale(const BE::Tensor x, BE::Tensor out, float factor, int64_t stream) {
    int64_t n = x.numel();
    if (n == 0) return;
    scale_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n, factor);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


def gpus():
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


pytestmark = pytest.mark.skipif(len(gpus()) < 2, reason="needs 2 or more GPUs")


@pytest.fixture(scope="module")
def mod():
    return bekc.load_cuda_inline("sharding_gpu", KERNELS)


def test_shard_map_with_a_fori_loop(mod):
    n = len(gpus())
    mesh = jax.make_mesh((n,), ("i",), devices=gpus())
    x = jax.device_put(jnp.arange(64 * n, dtype=jnp.float32), NamedSharding(mesh, P("i")))

    def body(v):
        return jax.lax.fori_loop(0, 3, lambda _, c: mod.scale(c, factor=2.0), v)

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
    np.testing.assert_allclose(f(x), 8 * np.arange(64 * n))


def test_pmap(mod):
    n = len(gpus())
    x = jnp.arange(32 * n, dtype=jnp.float32).reshape(n, 32)
    y = jax.pmap(lambda v: mod.scale(v, factor=3.0), devices=gpus())(x)
    np.testing.assert_allclose(y, 3 * np.asarray(x))


def test_cuda_graphs_on_every_device(mod):
    """A loop of kernels that XLA captures into a command buffer per device:
    every device's graph computes its own shard."""
    n = len(gpus())
    mesh = jax.make_mesh((n,), ("i",), devices=gpus())
    x = jax.device_put(jnp.arange(256 * n, dtype=jnp.float32), NamedSharding(mesh, P("i")))

    def body(v):
        for _ in range(5):
            v = mod.scale(v, factor=1.5)
        return v

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
    want = np.arange(256 * n) * 1.5 ** 5
    for _ in range(3):  # the first run captures, the next ones replay
        np.testing.assert_allclose(f(x), want, rtol=1e-5)
