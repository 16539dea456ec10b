"""Loads the module the CMake project built and calls it on the CPU, under jax.jit.

    PYTHONPATH=<bekc prefix>/lib/bekc/python python run.py <build>/bekc/ops/manifest.json
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

import bekc


def main(manifest):
    mod = bekc.load(manifest)
    x = jnp.arange(8, dtype=jnp.float32)
    y = jnp.full(8, 10.0, dtype=jnp.float32)
    bias = float(np.asarray(jax.jit(mod.add_bias)(x))[0] - np.asarray(x)[0])
    got = jax.jit(lambda a, b: mod.axpy(a, b, alpha=2.0))(x, y)
    np.testing.assert_allclose(np.asarray(got), 2.0 * np.asarray(x) + 10.0)
    # The plain JAX way, by target name.
    same = jax.ffi.ffi_call("example.add_bias", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    np.testing.assert_allclose(np.asarray(same), np.asarray(x) + bias)
    print(f"bias={bias:g} key={mod.manifest['key']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
