"""Loads what `bekc build` produced and calls it from JAX, under jax.jit.

    python examples/quickstart/run.py MANIFEST [MANIFEST ...]

Targets on a platform JAX does not have here (CUDA without a GPU) are
registered but not called.
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

import bekc


def check(name, got, want):
    ok = np.allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    print(f"  {name:<28} {'ok' if ok else 'WRONG'}")
    return ok


def run_cpu(mod):
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.uniform(0.5, 1.5, 1000), dtype=jnp.float32)
    b = jnp.asarray(rng.uniform(0.5, 1.5, 1000), dtype=jnp.float32)
    ok = check("vector_add (jit)", jax.jit(mod.vector_add)(a, b), a + b)
    ok &= check("scale_f32 factor=3.0", mod.scale_f32(a, factor=3.0), a * 3.0)
    v = jnp.asarray(rng.uniform(-70, -50, 1000), dtype=jnp.float32)
    drive = jnp.asarray(rng.uniform(-60, -40, 1000), dtype=jnp.float32)
    outs = [jax.ShapeDtypeStruct(v.shape, jnp.float32), jax.ShapeDtypeStruct(v.shape, jnp.bool_)]
    step = jax.jit(lambda v, i: mod.lif_step(v, i, out=outs, tau=10.0, v_th=-55.0, v_reset=-70.0))
    v_out, spikes = step(v, drive)
    nxt = v + (drive - v) / 10.0
    ok &= check("lif_step spikes", spikes, nxt >= -55.0)
    ok &= check("lif_step v_out", v_out, jnp.where(nxt >= -55.0, -70.0, nxt))
    ok &= raises("scale_f64 on float32", lambda: mod.scale_f64(a, factor=3.0),
                 "scale_f64 takes float64, got float32")
    return ok


def why(error):
    """The kernel's own words: the text after "failed: ", without jaxlib's suffix."""
    return str(error).split("failed: ")[-1].split(" [executable_name=")[0]


def raises(name, call, text):
    """A wrong call raises an exception that says what is wrong; the process goes on."""
    try:
        jax.block_until_ready(call())
    except Exception as e:  # jax.errors.JaxRuntimeError
        ok = text in str(e)
        print(f"  {name:<28} {'raises' if ok else 'WRONG ERROR'}: {why(e)}")
        return ok
    print(f"  {name:<28} WRONG: no error")
    return False


def run_cuda(mod):
    a = jnp.arange(1, 1025, dtype=jnp.float32)
    b = jnp.full(1024, 2.0, dtype=jnp.float32)
    ok = check("vector_add (jit)", jax.jit(mod.vector_add)(a, b), a + b)
    ok &= check("scale_by scale_factor=3.0", mod.scale_by(a, scale_factor=3.0), a * 3.0)
    ok &= raises("vector_add of 1024 + 1000", lambda: mod.vector_add(a, b[:1000]),
                 "sizes differ: 1024 + 1000 -> 1024")
    return ok


def main(paths):
    ok = True
    platforms = {d.platform for d in jax.devices()}
    for path in paths:
        mod = bekc.load(path)
        print(mod)
        kinds = {t["platform"] for t in mod.targets.values()}
        if "cpu" in kinds:
            # CPU targets run on JAX's cpu device, also where a GPU is the default.
            with jax.default_device(jax.devices("cpu")[0]):
                ok &= run_cpu(mod)
        elif "gpu" in platforms or "cuda" in platforms:
            ok &= run_cuda(mod)
        else:
            print("  (CUDA targets registered; no GPU here to call them)")
    print("all results correct" if ok else "SOME RESULTS WRONG")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
