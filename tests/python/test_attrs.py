"""Attribute casting: exact NumPy types, range errors, name errors."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import bekc
from bekc import _attrs
from bekc._loader import KernelFunction

INT_TYPES = {
    "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
    "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
}


def cast(v, t):
    return bekc.cast_attr(v, t, "my_fn", "my_attr")


@pytest.mark.parametrize("t", sorted(INT_TYPES))
def test_int_bounds_exact(t):
    info = np.iinfo(INT_TYPES[t])
    top = int(info.max) if t != "uint64" else 2**63 - 1  # JAX limit, see below
    for v in (int(info.min), top, 0, 5):
        r = cast(v, t)
        assert type(r) is INT_TYPES[t] and int(r) == v
    for bad in (int(info.min) - 1, int(info.max) + 1):
        with pytest.raises(ValueError) as e:
            cast(bad, t)
        msg = str(e.value)
        assert "my_fn" in msg and "my_attr" in msg and t in msg and str(bad) in msg


def test_examples_from_the_brief():
    assert type(cast(3.0, "float32")) is np.float32 and cast(3.0, "float32") == 3.0
    assert type(cast(5, "int32")) is np.int32 and cast(5, "int32") == 5
    with pytest.raises(ValueError, match="300"):
        cast(300, "uint8")
    with pytest.raises(ValueError, match="-1"):
        cast(-1, "uint32")


@pytest.mark.parametrize("v", [2.5, -0.1, np.float32(1.5), 1e-9])
def test_fractional_float_for_int_is_value_error(v):
    with pytest.raises(ValueError, match="fractional"):
        cast(v, "int32")


@pytest.mark.parametrize("v", [math.inf, -math.inf, math.nan, np.float32("nan")])
def test_non_finite_for_int_is_value_error(v):
    with pytest.raises(ValueError, match="non-finite"):
        cast(v, "int64")


def test_integral_floats_and_numpy_ints_accepted():
    assert cast(4.0, "int16") == 4 and type(cast(4.0, "int16")) is np.int16
    assert cast(np.float64(-7.0), "int8") == -7
    assert cast(np.int64(200), "uint8") == 200
    assert cast(np.uint64(2**63 - 1), "uint64") == 2**63 - 1
    assert cast(True, "int32") == 1
    assert cast(np.array(9), "int32") == 9  # 0-d array
    with pytest.raises(ValueError):
        cast(1e30, "int64")  # integral but out of range


def test_uint64_above_int64_max_is_refused_with_reason():
    # jax.ffi.ffi_call lowers integer attributes via an int64 (std::bad_cast otherwise)
    for v in (2**63, 2**64 - 1):
        with pytest.raises(ValueError, match="int64") as e:
            cast(v, "uint64")
        assert "my_attr" in str(e.value) and str(v - 2**64) in str(e.value)


def test_float_types():
    r = cast(1, "float64")
    assert type(r) is np.float64 and r == 1.0
    assert type(cast(np.float64(0.1), "float32")) is np.float32
    assert np.isinf(cast(math.inf, "float32"))  # representable: allowed
    assert np.isnan(cast(math.nan, "float64"))
    with pytest.raises(ValueError, match="range of float32"):
        cast(1e39, "float32")
    with pytest.raises(ValueError, match="my_attr"):
        cast(10**400, "float64")
    assert cast(3.4e38, "float32") == np.float32(3.4e38)


def test_bool():
    for v, want in ((True, True), (False, False), (1, True), (0, False), (np.bool_(True), True),
                    (1.0, True)):
        r = cast(v, "bool")
        assert type(r) is np.bool_ and bool(r) is want
    for bad in (2, -1, 0.5, math.nan):
        with pytest.raises(ValueError, match="my_attr"):
            cast(bad, "bool")


@pytest.mark.parametrize("bad", ["3", b"3", None, [1], (1,), {"a": 1}, 1 + 2j, np.complex64(1)])
def test_non_scalars_are_type_errors(bad):
    with pytest.raises(TypeError) as e:
        cast(bad, "int32")
    assert "my_fn" in str(e.value) and "my_attr" in str(e.value)


def test_array_attr_is_type_error():
    with pytest.raises(TypeError, match="shape"):
        cast(np.zeros(3), "float32")


def bits(r):
    """Raw 16 bits of a float16 / bfloat16 scalar."""
    return int(np.array(r).view(np.uint16))


def test_float16_is_sent_as_uint16_bits():
    r = cast(1.0, "float16")
    assert type(r) is np.uint16 and bits(r) == 0x3C00
    assert bits(cast(-2.0, "float16")) == 0xC000
    assert bits(cast(65504.0, "float16")) == 0x7BFF
    assert bits(cast(np.float16(0.5), "float16")) == 0x3800
    assert bits(cast(np.uint16(0x1234), "float16")) == 0x1234  # raw bits: reinterpreted
    assert bits(cast(math.inf, "float16")) == 0x7C00
    assert bits(cast(3, "float16")) == 0x4200
    with pytest.raises(ValueError, match="float16"):
        cast(70000.0, "float16")
    for _ in range(200):
        x = random.uniform(-60000, 60000)
        assert bits(cast(x, "float16")) == int(np.float16(x).view(np.uint16))
        assert bekc._attrs.float_to_float16_bits(x) == int(np.float16(x).view(np.uint16))


def test_bfloat16_is_sent_as_uint16_bits():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    r = cast(1.0, "bfloat16")
    assert type(r) is np.uint16 and bits(r) == 0x3F80
    assert bits(cast(3.0, "bfloat16")) == 0x4040
    assert bits(cast(-0.0, "bfloat16")) == 0x8000
    assert bits(cast(1.0 + 2**-8, "bfloat16")) == 0x3F80  # tie -> even
    assert bits(cast(1.0 + 3 * 2**-8, "bfloat16")) == 0x3F82  # tie -> even (up)
    assert bits(cast(math.nan, "bfloat16")) & 0x7FC0 == 0x7FC0
    assert bits(cast(math.inf, "bfloat16")) == 0x7F80
    assert bits(cast(np.uint16(0x4049), "bfloat16")) == 0x4049  # raw bits
    assert bits(cast(ml_dtypes.bfloat16(2.0), "bfloat16")) == 0x4000
    with pytest.raises(ValueError, match="bfloat16"):
        cast(3.4e38, "bfloat16")  # rounds to inf


def test_bfloat16_fallback_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(0)
    with np.errstate(invalid="ignore"):
        random_bits = rng.integers(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32)
        from_bits = random_bits.view(np.float32).astype(np.float64)
    vals = np.concatenate([
        rng.standard_normal(2000) * 10.0 ** rng.integers(-40, 38, 2000),
        from_bits,
        [0.0, -0.0, 1.0, 1 + 2**-8, 1 + 3 * 2**-8, 65504.0, 1e-45, -1e-40],
    ])
    for v in vals:
        v = float(v)
        if math.isnan(v):
            continue
        want = int(np.array(np.float32(v)).astype(ml_dtypes.bfloat16).view(np.uint16))
        assert _attrs._bfloat16_bits_manual(v) == want, v


def test_bfloat16_bits_without_ml_dtypes(monkeypatch):
    monkeypatch.setattr(_attrs, "_ml_dtypes", None)
    assert type(cast(1.0, "bfloat16")) is np.uint16
    assert _attrs.float_to_bfloat16_bits(1.0) == 0x3F80
    assert _attrs.float_to_bfloat16_bits(1.0 + 3 * 2**-8) == 0x3F82
    assert _attrs.float_to_bfloat16_bits(-3.0) == 0xC040
    assert _attrs.float_to_bfloat16_bits(3.4e38) == 0x7F80


# --------------------------------------------------------------------------- name checks
def _fn(attrs):
    return KernelFunction({
        "name": "pre.scale_by", "symbol": "s", "function": "scale_by", "platform": "cpu",
        "num_args": 1, "num_rets": 1, "attrs": [{"name": n, "type": t} for n, t in attrs]})


def test_unknown_attribute_suggests_closest():
    fn = _fn([("scale_factor", "float32"), ("n", "int32")])
    with pytest.raises(TypeError) as e:
        fn.cast_attrs({"scale_factr": 1.0, "n": 1})
    msg = str(e.value)
    assert "scale_by" in msg and "scale_factr" in msg and "did you mean 'scale_factor'" in msg


def test_unknown_attribute_without_close_match():
    fn = _fn([("scale_factor", "float32")])
    with pytest.raises(TypeError) as e:
        fn.cast_attrs({"scale_factor": 1.0, "zzz": 1})
    assert "zzz" in str(e.value) and "scale_by" in str(e.value)
    assert "did you mean" not in str(e.value)


def test_missing_attribute():
    fn = _fn([("scale_factor", "float32"), ("n", "int32")])
    with pytest.raises(TypeError) as e:
        fn.cast_attrs({"n": 3})
    assert "scale_by" in str(e.value) and "scale_factor" in str(e.value)
    assert "float32" in str(e.value)


def test_cast_attrs_types():
    fn = _fn([("scale_factor", "float32"), ("n", "int32"), ("flag", "bool")])
    out = fn.cast_attrs({"scale_factor": 3, "n": 5.0, "flag": True})
    assert type(out["scale_factor"]) is np.float32 and out["scale_factor"] == 3.0
    assert type(out["n"]) is np.int32 and out["n"] == 5
    assert type(out["flag"]) is np.bool_


def test_traced_attribute_is_type_error():
    jax = pytest.importorskip("jax")
    fn = _fn([("scale_factor", "float32")])

    @jax.jit
    def f(s):
        return fn.cast_attrs({"scale_factor": s})

    with pytest.raises(TypeError) as e:
        f(1.0)
    assert str(e.value) == (
        "scale_by(): attribute 'scale_factor' (float32) must be a static (concrete) scalar, "
        "not a traced value: attributes are baked into the compiled program. Under jax.jit, "
        "mark it static (jax.jit(f, static_argnames='scale_factor')) or bind it before "
        "jax.jit (functools.partial(f, scale_factor=...)); pass it as an input array if it "
        "must vary")

