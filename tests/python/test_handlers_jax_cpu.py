"""Generated handlers end to end through JAX on the ``cpu`` platform.

tests/harness/kernels/handlers_cpu.cpp is built with the real ``bekc`` binary;
every target of the manifest is registered directly with
``jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(fn), platform="cpu")``
through ctypes (not through the ``bekc`` package) and called with
``jax.ffi.ffi_call`` under ``jax.jit``. Inputs are random and never zero;
results are compared with NumPy / jax.numpy. The 64-bit cases need
``jax_enable_x64`` and run in a child interpreter.

The bekc binary is found by tests/support/binaries.py.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402

from support.binaries import bekc_binary  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(REPO, "tests", "harness", "kernels", "handlers_cpu.cpp")

# Libraries stay loaded for the life of the process: XLA holds their handlers.
_LOADED: list = []


def build(source: str, cache_dir: str, prefix: str) -> dict:
    """Runs `bekc build` and returns its --json result."""
    proc = subprocess.run(
        [str(bekc_binary()), "build", source, "--cache-dir", cache_dir, "--target-prefix", prefix,
         "--json", "-q"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def register_manifest(manifest_path: str, nograph: bool = False) -> dict:
    """Registers every target of a manifest with JAX; returns {function: target name}."""
    with open(manifest_path) as f:
        manifest = json.load(f)
    assert manifest["schema"] == 1
    lib = ctypes.CDLL(os.path.join(os.path.dirname(manifest_path), manifest["library"]))
    _LOADED.append(lib)
    names = {}
    for t in manifest["targets"]:
        symbol = t["symbol"] + ("_nograph" if nograph else "")
        name = t["name"] + ("_ng" if nograph else "")
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, symbol)),
                                    platform=t["platform"])
        names[t["function"]] = name
    return names


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    prefix = "hc_" + uuid.uuid4().hex[:8]
    result = build(KERNEL, str(tmp_path_factory.mktemp("bekc-cache")), prefix)
    return {"prefix": prefix, "manifest": result["manifest"],
            "targets": register_manifest(result["manifest"])}


@pytest.fixture(scope="module")
def T(built):
    return built["targets"]


def rand(shape, dtype=np.float32, seed=0):
    """Random values in [-4, -0.25] U [0.25, 4]: never zero."""
    rng = np.random.default_rng(seed)
    mag = rng.uniform(0.25, 4.0, size=shape)
    sign = rng.choice([-1.0, 1.0], size=shape)
    return (mag * sign).astype(dtype)


def line_of(needle: str) -> int:
    with open(KERNEL) as f:
        for n, line in enumerate(f, 1):
            if needle in line:
                return n
    raise AssertionError(needle)


def ffi(name, out):
    return jax.ffi.ffi_call(name, out)


def sds(x):
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


# --------------------------------------------------------------------------- attributes
SMALL_OUT = [jnp.bool_, jnp.int8, jnp.uint8, jnp.int16, jnp.uint16, jnp.int32, jnp.uint32,
             jnp.float32, jnp.float16, jnp.bfloat16]


@pytest.mark.parametrize("seed", range(4))
def test_every_attribute_type_below_64_bits(T, seed):
    rng = np.random.default_rng(100 + seed)

    def nonzero_int(dtype):
        info = np.iinfo(dtype)
        while True:
            v = int(rng.integers(info.min, info.max, endpoint=True))
            if v:
                return dtype(v)

    h = np.float16(rng.uniform(-60000, 60000))
    bh = ml_dtypes.bfloat16(rng.uniform(-1e30, 1e30))
    attrs = dict(zb=np.bool_(seed % 2 == 0), Yi8=nonzero_int(np.int8), xu8=nonzero_int(np.uint8),
                 wi16=nonzero_int(np.int16), vu16=nonzero_int(np.uint16),
                 ui32=nonzero_int(np.int32), tu32=nonzero_int(np.uint32),
                 af32=np.float32(rng.uniform(-1e20, 1e20)),
                 # XLA has no 16-bit float scalar attributes: halves travel as uint16 bits.
                 bh=h.view(np.uint16), cbh=bh.view(np.uint16))
    f = ffi(T["attrs_small"], [jax.ShapeDtypeStruct((), d) for d in SMALL_OUT])
    x = jnp.asarray(rand((3,), seed=seed))
    out = jax.jit(lambda x: f(x, **attrs))(x)
    out = [np.asarray(o) for o in out]
    assert [o.dtype for o in out] == [np.dtype(d) for d in SMALL_OUT]
    assert all(o.shape == () for o in out)
    assert out[0] == attrs["zb"]
    for o, key in zip(out[1:7], ["Yi8", "xu8", "wi16", "vu16", "ui32", "tu32"]):
        assert o == attrs[key] and o.dtype == attrs[key].dtype
    assert out[7].view(np.uint32) == attrs["af32"].view(np.uint32)
    assert out[8] == h and out[8].view(np.uint16) == attrs["bh"]
    assert out[9] == bh and out[9].view(np.uint16) == attrs["cbh"]


_X64_CHILD = textwrap.dedent("""
    import ctypes, json, os, sys
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    manifest_path = sys.argv[1]
    m = json.load(open(manifest_path))
    lib = ctypes.CDLL(os.path.join(os.path.dirname(manifest_path), m["library"]))
    T = {}
    for t in m["targets"]:
        jax.ffi.register_ffi_target(t["name"], jax.ffi.pycapsule(getattr(lib, t["symbol"])),
                                    platform="cpu")
        T[t["function"]] = t["name"]
    rng = np.random.default_rng(7)

    # 64-bit attributes, bit for bit.
    wide = jax.ffi.ffi_call(T["attrs_wide"], [jax.ShapeDtypeStruct((), jnp.int64),
                                               jax.ShapeDtypeStruct((), jnp.uint64),
                                               jax.ShapeDtypeStruct((), jnp.float64)])
    # (JAX lowers integer attributes through an int64, so uint64 stays below 2**63.)
    for i64, u64, f64 in [(-2**63, 2**63 - 1, np.pi), (0x0123456789ABCDEF, 1, -1.7976931348623157e308),
                          (int(rng.integers(-2**62, 2**62)), int(rng.integers(1, 2**62)),
                           float(rng.uniform(-1e300, 1e300)))]:
        o = jax.jit(lambda x: wide(x, i64=np.int64(i64), mu64=np.uint64(u64),
                                   f64=np.float64(f64)))(jnp.ones(2, jnp.float32))
        assert int(o[0]) == i64 and o[0].dtype == jnp.int64, (o, i64)
        assert int(o[1]) == u64 and o[1].dtype == jnp.uint64, (o, u64)
        assert np.float64(o[2]).view(np.uint64) == np.float64(f64).view(np.uint64), (o, f64)

    # float64 tensors through BE_DISPATCH_FLOATING.
    x = rng.uniform(0.5, 3, size=(4, 5)) * rng.choice([-1, 1], size=(4, 5))
    y = rng.uniform(0.5, 3, size=(4, 5)) * rng.choice([-1, 1], size=(4, 5))
    axpy = jax.ffi.ffi_call(T["axpy"], jax.ShapeDtypeStruct(x.shape, jnp.float64))
    r = jax.jit(lambda x, y: axpy(x, y, alpha=np.float64(0.3)))(jnp.asarray(x), jnp.asarray(y))
    assert r.dtype == jnp.float64
    np.testing.assert_array_equal(np.asarray(r), 0.3 * x + y)

    # 64-bit integer tensors through BE_DISPATCH_INTEGRAL.
    for dt in (np.int64, np.uint64):
        a = rng.integers(1, 2**40, size=(3, 2)).astype(dt)
        f = jax.ffi.ffi_call(T["int_affine"], jax.ShapeDtypeStruct(a.shape, dt))
        r = np.asarray(jax.jit(f)(jnp.asarray(a)))
        assert r.dtype == dt
        np.testing.assert_array_equal(r, (dt(3) * a - dt(1)).astype(dt))

    # The tensor view of an int64 info buffer.
    d = jax.ffi.ffi_call(T["describe"], jax.ShapeDtypeStruct((24,), jnp.int64))
    info = np.asarray(jax.jit(d)(jnp.ones((2, 3, 4), jnp.float64)))
    assert list(info[:6]) == [3, 24, 2, 8, 192, 1], info
    print("X64-OK")
""")


def test_64_bit_attributes_and_tensors_with_x64(built):
    proc = subprocess.run([sys.executable, "-c", _X64_CHILD, built["manifest"]],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "X64-OK" in proc.stdout, proc.stderr[-4000:] + proc.stdout


# --------------------------------------------------------------------------- tensors
SHAPES = [(), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (1, 2, 3, 1, 2), (2, 1, 2, 1, 2, 3),
          (1, 2, 1, 2, 1, 2, 3), (2, 1, 2, 1, 2, 1, 2, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"rank{len(s)}")
def test_rank_0_to_8(T, shape):
    assert len(SHAPES) == 9
    x = rand(shape, seed=len(shape))
    f = ffi(T["affine"], jax.ShapeDtypeStruct(shape, jnp.float32))
    y = jax.jit(lambda x: f(x, a=np.float32(-1.75), b=np.float32(0.5)))(jnp.asarray(x))
    assert y.shape == shape
    np.testing.assert_allclose(np.asarray(y), np.asarray(jnp.float32(-1.75) * x + jnp.float32(0.5)),
                               rtol=1e-6, atol=1e-6)

    d = ffi(T["describe"], jax.ShapeDtypeStruct((24,), jnp.int32))
    info = np.asarray(jax.jit(d)(jnp.asarray(x)))
    strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
    pad = [-1] * (8 - len(shape))
    assert list(info[:6]) == [len(shape), x.size, 1, 4, 4 * x.size, 1]
    assert list(info[6:14]) == list(shape) + pad
    assert list(info[14:22]) == strides + pad
    assert info[22] == x.reshape(-1).view(np.uint8)[0]
    assert info[23] == 1


@pytest.mark.parametrize("dtype,be", [(jnp.bool_, 12), (jnp.int8, 4), (jnp.int16, 5), (jnp.int32, 6),
                                      (jnp.uint8, 8), (jnp.uint16, 9), (jnp.uint32, 10),
                                      (jnp.float16, 0), (jnp.bfloat16, 3), (jnp.float32, 1),
                                      (jnp.complex64, 13)])
def test_buffer_dtypes_map_to_be_dtype(T, dtype, be):
    x = jnp.ones((2, 3), dtype)
    d = ffi(T["describe"], jax.ShapeDtypeStruct((24,), jnp.int32))
    info = np.asarray(jax.jit(d)(x))
    assert info[2] == be
    assert info[3] == np.dtype(dtype).itemsize
    assert info[4] == 6 * np.dtype(dtype).itemsize


@pytest.mark.parametrize("shape", [(), (7,), (3, 5), (2, 3, 4)], ids=str)
def test_several_outputs(T, shape):
    x, w = rand(shape, seed=1), rand(shape, seed=2)
    rows_shape = shape[:-1] if shape else ()
    f = ffi(T["stats"], [jax.ShapeDtypeStruct((), jnp.float32), jax.ShapeDtypeStruct(shape, jnp.float32),
                         jax.ShapeDtypeStruct(rows_shape, jnp.float32)])
    total, prod, rows = jax.jit(f)(jnp.asarray(x), jnp.asarray(w))
    np.testing.assert_allclose(np.asarray(total), np.asarray(jnp.sum(x)), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(prod), np.asarray(jnp.asarray(x) * jnp.asarray(w)))
    want_rows = np.asarray(jnp.sum(x, axis=-1)) if shape else x
    np.testing.assert_allclose(np.asarray(rows), want_rows, rtol=1e-5, atol=1e-6)


def test_floating_dispatch_float32(T):
    x, y = rand((6, 7), seed=3), rand((6, 7), seed=4)
    f = ffi(T["axpy"], jax.ShapeDtypeStruct(x.shape, jnp.float32))
    r = jax.jit(lambda x, y: f(x, y, alpha=np.float64(2.5)))(jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_allclose(np.asarray(r), np.asarray(jnp.float32(2.5) * x + y), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32])
def test_integral_dispatch(T, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    a = rng.integers(max(info.min, -1000), min(info.max, 1000), size=(4, 3)).astype(dtype)
    a[a == 0] = 7
    f = ffi(T["int_affine"], jax.ShapeDtypeStruct(a.shape, dtype))
    r = np.asarray(jax.jit(f)(jnp.asarray(a)))
    assert r.dtype == dtype
    want = np.asarray(jnp.asarray(a) * jnp.asarray(3, dtype) - jnp.asarray(1, dtype))
    np.testing.assert_array_equal(r, want)


def test_nograph_variant_gives_the_same_results(built):
    names = register_manifest(built["manifest"], nograph=True)
    x = rand((4, 4), seed=9)
    f = ffi(names["affine"], jax.ShapeDtypeStruct(x.shape, jnp.float32))
    y = jax.jit(lambda x: f(x, a=np.float32(3), b=np.float32(-1)))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y), 3 * x - 1, rtol=1e-6)


def test_inside_a_jit_loop(T):
    x = rand((8,), seed=11)
    f = ffi(T["affine"], jax.ShapeDtypeStruct(x.shape, jnp.float32))

    def body(_, v):
        return f(v, a=np.float32(0.5), b=np.float32(1.0))

    r = jax.jit(lambda v: jax.lax.fori_loop(0, 10, body, v))(jnp.asarray(x))
    want = x.astype(np.float64)
    for _ in range(10):
        want = 0.5 * want + 1.0
    np.testing.assert_allclose(np.asarray(r), want, rtol=1e-5)


# --------------------------------------------------------------------------- errors
def expect_error(fn, message):
    with pytest.raises(Exception) as info:
        jax.block_until_ready(fn())
    assert str(info.value) == message


def test_wrong_attribute_dtype_is_an_exception_and_the_process_goes_on(built, T):
    p = built["prefix"]
    x = jnp.asarray(rand((5,), seed=12))
    f = ffi(T["affine"], sds(x))
    hint = " (pass e.g. np.float32(value), or call through bekc.load, which casts)"
    for bad, got in [(np.int32(2), "int32"), (np.float64(2.0), "float64"), (np.int64(2), "int64"),
                     (np.bool_(True), "bool")]:
        expect_error(lambda: jax.jit(lambda x: f(x, a=bad, b=np.float32(1)))(x),
                     f"INVALID_ARGUMENT: {p}.affine: attribute 'a' must be float32, got {got}{hint}")
    y = jax.jit(lambda x: f(x, a=np.float32(2), b=np.float32(1)))(x)
    np.testing.assert_allclose(np.asarray(y), 2 * np.asarray(x) + 1, rtol=1e-6)


def test_half_attribute_sent_as_float_is_refused_with_a_hint(built, T):
    p = built["prefix"]
    f = ffi(T["attrs_small"], [jax.ShapeDtypeStruct((), d) for d in SMALL_OUT])
    attrs = dict(zb=np.bool_(True), Yi8=np.int8(1), xu8=np.uint8(1), wi16=np.int16(1),
                 vu16=np.uint16(1), ui32=np.int32(1), tu32=np.uint32(1), af32=np.float32(1),
                 bh=np.float32(1.5), cbh=np.uint16(0x3F80))
    expect_error(lambda: jax.jit(lambda x: f(x, **attrs))(jnp.ones(2)),
                 f"INVALID_ARGUMENT: {p}.attrs_small: attribute 'bh' must be float16 (its bits as a "
                 "uint16 scalar), got float32 (pass e.g. np.float16(value).view(np.uint16), or call "
                 "through bekc.load, which casts)")


def test_failing_be_check_is_an_exception_and_the_process_goes_on(built, T):
    p = built["prefix"]
    x = jnp.asarray(rand((6,), seed=13))
    f = ffi(T["checked"], sds(x))
    line = line_of("BE_CHECK(n > 0)")
    for n in (-3, 0):
        expect_error(lambda: jax.jit(lambda x: f(x, n=np.int32(n)))(x),
                     f"INTERNAL: {p}.checked: {KERNEL}:{line}: BE_CHECK(n > 0) failed: "
                     f"n must be positive, got {n}")
        y = jax.jit(lambda x: f(x, n=np.int32(4)))(x)
        np.testing.assert_allclose(np.asarray(y), 4 * np.asarray(x), rtol=1e-6)


def test_exceptions_from_the_kernel(built, T):
    p = built["prefix"]
    x = jnp.ones((2,), jnp.float32)
    expect_error(lambda: jax.jit(ffi(T["throws_std"], sds(x)))(x),
                 f"INTERNAL: {p}.throws_std: a plain std::runtime_error")
    expect_error(lambda: jax.jit(ffi(T["throws_int"], sds(x)))(x),
                 f"INTERNAL: {p}.throws_int: unknown C++ exception")
    line = line_of("BE_DISPATCH_FLOATING(x.dtype()")
    xi = jnp.ones((3,), jnp.int32)
    expect_error(lambda: jax.jit(lambda a: ffi(T["axpy"], sds(a))(a, a, alpha=np.float64(1)))(xi),
                 f"INTERNAL: {p}.axpy: {KERNEL}:{line}: BE_DISPATCH_FLOATING(x.dtype()): "
                 "unsupported dtype int32 (supported: float32, float64)")


def test_wrong_counts_and_names(built, T):
    p = built["prefix"]
    x = jnp.asarray(rand((3,), seed=14))
    f = ffi(T["affine"], sds(x))
    a, b = np.float32(1), np.float32(2)
    expect_error(lambda: jax.jit(lambda x: f(x, x, a=a, b=b))(x),
                 f"INVALID_ARGUMENT: {p}.affine: expected 1 arguments, got 2")
    expect_error(lambda: jax.jit(lambda x: ffi(T["affine"], [sds(x), sds(x)])(x, a=a, b=b))(x),
                 f"INVALID_ARGUMENT: {p}.affine: expected 1 results, got 2")
    expect_error(lambda: jax.jit(lambda x: f(x, a=a))(x),
                 f"INVALID_ARGUMENT: {p}.affine: expected 2 attributes, got 1")
    expect_error(lambda: jax.jit(lambda x: f(x, a=a, c=b))(x),
                 f"INVALID_ARGUMENT: {p}.affine: unexpected attribute 'c' (expected 'b'; "
                 "attributes are matched by name)")


def test_unsupported_buffers(built, T):
    p = built["prefix"]
    d = ffi(T["describe"], jax.ShapeDtypeStruct((24,), jnp.int32))
    expect_error(lambda: jax.jit(d)(jnp.ones((3,), jnp.float8_e4m3fn)),
                 f"INVALID_ARGUMENT: {p}.describe: argument 0 has dtype float8_e4m3fn, which "
                 "BE::Tensor cannot represent")
    expect_error(lambda: jax.jit(d)(jnp.ones((1, 2, 1, 1, 2, 1, 1, 1, 2), jnp.float32)),
                 f"INVALID_ARGUMENT: {p}.describe: argument 0 has rank 9; BE::Tensor supports 0 to "
                 "8 dimensions")
    x = jnp.ones((2,), jnp.float32)
    f = ffi(T["affine"], jax.ShapeDtypeStruct((2,), jnp.int4))
    expect_error(lambda: jax.jit(lambda v: f(v, a=np.float32(1), b=np.float32(1)))(x),
        f"INVALID_ARGUMENT: {p}.affine: result 0 has dtype int4, which BE::Tensor cannot represent")
