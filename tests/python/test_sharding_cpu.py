"""bekc kernels inside jax.shard_map on several CPU devices: the typed call
marks its results as varying over the manual axes its inputs vary over, so
JAX's default check_vma holds (a fori_loop carry keeps its type).

The host platform's device count is fixed when JAX starts, so each case runs
in a fresh interpreter with --xla_force_host_platform_device_count=4.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO
from support.kernels import SCALE_CPP

# (sum, diff) = (a + b, a - b): an export with two outputs beside SCALE_CPP.
ADD_SUB_CPP = r"""
// @BE add_sub arg arg ret ret
void add_sub(const BE::Tensor a, const BE::Tensor b, BE::Tensor sum, BE::Tensor diff) {
    const float* x = static_cast<const float*>(a.data_ptr());
    const float* y = static_cast<const float*>(b.data_ptr());
    float* s = static_cast<float*>(sum.data_ptr());
    float* d = static_cast<float*>(diff.data_ptr());
    for (int64_t i = 0; i < a.numel(); ++i) { s[i] = x[i] + y[i]; d[i] = x[i] - y[i]; }
}
"""
KERNELS = SCALE_CPP + ADD_SUB_CPP

PRELUDE = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    import bekc
    mod = bekc.load_cpp_inline("sharding_cpu", sys.argv[1])
    assert len(jax.devices()) == 4, jax.devices()
    mesh = jax.make_mesh((4,), ("i",))
    x = jax.device_put(jnp.arange(8, dtype=jnp.float32), NamedSharding(mesh, P("i")))
""")


def run_script(bekc_bin, tmp_path, body: str) -> str:
    env = dict(os.environ, JAX_PLATFORMS="cpu", BEKC=bekc_bin,
               BEKC_CACHE_DIR=str(tmp_path / "cache"),
               XLA_FLAGS="--xla_force_host_platform_device_count=4",
               PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python"),
                                           os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body), KERNELS],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_fori_loop_over_a_kernel_inside_shard_map(bekc_bin, tmp_path):
    out = run_script(bekc_bin, tmp_path, """
        def body(v):
            return jax.lax.fori_loop(0, 3, lambda _, c: mod.scale(c, factor=2.0), v)
        f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
        np.testing.assert_allclose(f(x), 8 * np.arange(8))
        print("ok")
    """)
    assert out.strip() == "ok"


def test_every_output_is_marked_and_invariant_inputs_stay_invariant(bekc_bin, tmp_path):
    out = run_script(bekc_bin, tmp_path, """
        def body(v, w):
            def step(_, carry):
                s, d = mod.add_sub(carry[0], w, out=[jax.ShapeDtypeStruct(carry[0].shape,
                    jnp.float32)] * 2)
                return (s, d)
            return jax.lax.fori_loop(0, 2, step, (v, v))
        w = jnp.ones(2, jnp.float32)  # replicated: invariant over 'i'
        f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("i"), P()),
                                  out_specs=(P("i"), P("i"))))
        s, d = f(x, w)
        np.testing.assert_allclose(s, np.arange(8) + 2)
        np.testing.assert_allclose(d, np.arange(8) + 1 - 1)

        def invariant(w):
            r = mod.scale(w, factor=3.0)
            assert not bekc._loader._varying_axes(jax.typeof, r), jax.typeof(r)
            return r
        g = jax.jit(jax.shard_map(invariant, mesh=mesh, in_specs=P(), out_specs=P()))
        np.testing.assert_allclose(g(w), 3 * np.ones(2))
        print("ok")
    """)
    assert out.strip() == "ok"
