"""Loads build/manifest.json (made by `make`) and calls its kernels on the CPU.

    PYTHONPATH=<bekc>/python python run.py build/manifest.json
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

import bekc


def main(manifest):
    mod = bekc.load(manifest)
    x = jnp.linspace(0.0, 1.0, 16, dtype=jnp.float32)

    @jax.jit
    def step(x):
        return mod.scale(mod.add_offset(x), factor=2.0)

    y = np.asarray(step(x))
    offset = float(y[0] / 2.0 - np.asarray(x)[0])
    np.testing.assert_allclose(y, (np.asarray(x) + offset) * 2.0, rtol=1e-6)
    print(f"offset={offset:g} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/manifest.json"))
