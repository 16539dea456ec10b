"""One jaxlib release against one bekc-built CPU library.

    python check_handlers.py MANIFEST

Registers every target of the manifest (tests/harness/kernels/handlers_cpu.cpp
built by bekc) with ``jax.ffi.register_ffi_target`` through ctypes, calls a
few of them under ``jax.jit`` and checks the results, then checks that a wrong
attribute dtype and a failing BE_CHECK raise and that the process goes on.
Prints one line, ``PASS jax=X jaxlib=Y`` or ``FAIL <reason>``; exit status 0 or 1.
Uses only what every jax since 0.5.0 has (jax.ffi.*), no bekc Python package.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import traceback


def main(manifest_path: str) -> None:
    import numpy as np
    import jax
    import jax.numpy as jnp
    import jaxlib

    versions = f"jax={jax.__version__} jaxlib={jaxlib.__version__} numpy={np.__version__}"
    with open(manifest_path) as f:
        manifest = json.load(f)
    lib = ctypes.CDLL(os.path.join(os.path.dirname(manifest_path), manifest["library"]))
    T = {}
    for t in manifest["targets"]:
        # Registration runs the metadata query: a version XLA rejects fails here.
        jax.ffi.register_ffi_target(t["name"], jax.ffi.pycapsule(getattr(lib, t["symbol"])),
                                    platform="cpu")
        jax.ffi.register_ffi_target(t["name"] + "_ng",
                                    jax.ffi.pycapsule(getattr(lib, t["symbol"] + "_nograph")),
                                    platform="cpu")
        T[t["function"]] = t["name"]

    rng = np.random.default_rng(0)
    x = (rng.uniform(0.25, 4, size=(3, 5)) * rng.choice([-1, 1], size=(3, 5))).astype(np.float32)
    w = (rng.uniform(0.25, 4, size=(3, 5)) * rng.choice([-1, 1], size=(3, 5))).astype(np.float32)
    sds = jax.ShapeDtypeStruct

    # Attributes and one output, in both handler variants, inside a jit loop too.
    for name in (T["affine"], T["affine"] + "_ng"):
        f = jax.ffi.ffi_call(name, sds(x.shape, jnp.float32))
        y = jax.jit(lambda v: f(v, a=np.float32(1.5), b=np.float32(-2)))(x)
        np.testing.assert_allclose(np.asarray(y), 1.5 * x - 2, rtol=1e-6)
    f = jax.ffi.ffi_call(T["affine"], sds(x.shape, jnp.float32))
    y = jax.jit(lambda v: jax.lax.fori_loop(
        0, 3, lambda i, u: f(u, a=np.float32(0.5), b=np.float32(1)), v))(x)
    np.testing.assert_allclose(np.asarray(y), ((x * 0.5 + 1) * 0.5 + 1) * 0.5 + 1, rtol=1e-5)

    # Several outputs.
    stats = jax.ffi.ffi_call(T["stats"], [sds((), jnp.float32), sds(x.shape, jnp.float32),
                                          sds((3,), jnp.float32)])
    total, prod, rows = jax.jit(stats)(x, w)
    np.testing.assert_allclose(float(total), float(x.sum()), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(prod), x * w)
    np.testing.assert_allclose(np.asarray(rows), x.sum(axis=1), rtol=1e-5)

    # Every attribute type below 64 bits (halves as uint16 bits), rank 0 outputs.
    dtypes = [jnp.bool_, jnp.int8, jnp.uint8, jnp.int16, jnp.uint16, jnp.int32, jnp.uint32,
              jnp.float32, jnp.float16, jnp.bfloat16]
    small = jax.ffi.ffi_call(T["attrs_small"], [sds((), d) for d in dtypes])
    attrs = dict(zb=np.bool_(True), Yi8=np.int8(-7), xu8=np.uint8(200), wi16=np.int16(-300),
                 vu16=np.uint16(60000), ui32=np.int32(-123456), tu32=np.uint32(4000000000),
                 af32=np.float32(3.25), bh=np.float16(1.5).view(np.uint16), cbh=np.uint16(0x4040))
    out = [np.asarray(o) for o in jax.jit(lambda v: small(v, **attrs))(x)]
    assert bool(out[0]) is True
    assert [int(o) for o in out[1:7]] == [-7, 200, -300, 60000, -123456, 4000000000], out
    assert float(out[7]) == 3.25 and float(out[8]) == 1.5 and float(out[9]) == 3.0, out

    # Rank 8 input.
    d = jax.ffi.ffi_call(T["describe"], sds((24,), jnp.int32))
    info = np.asarray(jax.jit(d)(jnp.ones((2, 1, 2, 1, 2, 1, 2, 3), jnp.float32)))
    assert list(info[:2]) == [8, 48] and list(info[6:14]) == [2, 1, 2, 1, 2, 1, 2, 3], info

    # Error paths: a Python exception each, and the process goes on.
    def raises(fn, needle):
        try:
            jax.block_until_ready(fn())
        except Exception as e:  # XlaRuntimeError / JaxRuntimeError, by release
            assert needle in str(e), f"message {str(e)!r} lacks {needle!r}"
            return
        raise AssertionError(f"no exception (wanted {needle!r})")

    raises(lambda: jax.jit(lambda v: f(v, a=np.int32(2), b=np.float32(1)))(x),
           f"INVALID_ARGUMENT: {T['affine']}: attribute 'a' must be float32, got int32")
    checked = jax.ffi.ffi_call(T["checked"], sds(x.shape, jnp.float32))
    raises(lambda: jax.jit(lambda v: checked(v, n=np.int32(-3)))(x),
           "BE_CHECK(n > 0) failed: n must be positive, got -3")
    y = jax.jit(lambda v: checked(v, n=np.int32(2)))(x)
    np.testing.assert_allclose(np.asarray(y), 2 * x, rtol=1e-6)
    print(f"PASS {versions}")


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except Exception as e:  # one line for the table, the traceback for the log
        traceback.print_exc()
        print(f"FAIL {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        sys.exit(1)
