"""Casting Python scalars to the attribute types recorded in a manifest.

Every attribute of a bekc handler has a fixed scalar type; XLA checks the
type of each attribute it receives, so a Python ``3.0`` must become
``np.float32(3.0)`` before ``jax.ffi.ffi_call`` sees it. ``cast_attr`` does that
and refuses values the type cannot hold (``ValueError``) or values that are
not scalars at all (``TypeError``).

``float16`` and ``bfloat16`` attributes reach the C++ function as ``uint16_t``
raw bits and travel as XLA U16 scalars (``np.uint16``): XLA's FFI attribute
conversion accepts only 32- and 64-bit float scalars, so an F16/BF16 scalar
attribute cannot get through ``jax.ffi.ffi_call``. A Python or NumPy number is
rounded to the half type (round to nearest even; bfloat16 rounds via float32)
and its bits are sent. ``np.float16`` / ``ml_dtypes.bfloat16`` scalars send
their bits; a value that is already an ``np.uint16`` is taken to be the raw
bits and sent unchanged.
"""

from __future__ import annotations

import math
import operator
import struct

import numpy as np

__all__ = ["ATTR_TYPES", "cast_attr", "float_to_bfloat16_bits", "float_to_float16_bits"]

_INT_TYPES = {
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
}
_INT_RANGES = {k: (int(np.iinfo(t).min), int(np.iinfo(t).max)) for k, t in _INT_TYPES.items()}
# jax.ffi.ffi_call lowers an integer attribute through MLIR's IntegerAttr.get,
# whose Python binding takes an int64: uint64 values above this cannot be sent.
_JAX_UINT64_MAX = 2**63 - 1
_FLOAT_TYPES = {"float32": np.float32, "float64": np.float64}
_HALF_TYPES = ("float16", "bfloat16")

#: Every attribute type a manifest may name.
ATTR_TYPES = frozenset(["bool", *_INT_TYPES, *_FLOAT_TYPES, *_HALF_TYPES])


def _where(function: str, attr: str) -> str:
    return f"{function}(): attribute '{attr}'"


def _scalar(value, function: str, attr: str, type_name: str):
    """Reduce 0-d arrays (NumPy or concrete JAX) to a Python/NumPy scalar."""
    if isinstance(value, (bool, int, float, np.generic)):
        return value
    if isinstance(value, (str, bytes, complex)) or value is None:
        raise TypeError(
            f"{_where(function, attr)} ({type_name}) must be a real scalar, "
            f"got {type(value).__name__} {value!r}")
    shape = getattr(value, "shape", None)
    if shape is not None:
        if tuple(shape) != ():
            raise TypeError(
                f"{_where(function, attr)} ({type_name}) must be a scalar, "
                f"got an array of shape {tuple(shape)}")
        try:
            return np.asarray(value)[()]
        except Exception as e:  # a tracer: attributes are compile-time constants
            raise TypeError(
                f"{_where(function, attr)} ({type_name}) must be a static (concrete) "
                f"scalar, not a traced value: attributes are baked into the compiled "
                f"program. Under jax.jit, mark it static (jax.jit(f, "
                f"static_argnames={attr!r})) or bind it before jax.jit "
                f"(functools.partial(f, {attr}=...)); pass it as an input array if it must "
                f"vary") from e
    raise TypeError(
        f"{_where(function, attr)} ({type_name}) must be a real scalar, "
        f"got {type(value).__name__}")


def _as_python_number(v, function: str, attr: str, type_name: str):
    """Return an ``int`` (exact) or ``float`` for a real scalar ``v``."""
    if isinstance(v, (bool, np.bool_)):
        return int(bool(v))
    if isinstance(v, np.complexfloating):
        raise TypeError(f"{_where(function, attr)} ({type_name}) must be real, got {v!r}")
    if isinstance(v, (int, np.integer)):
        return operator.index(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    raise TypeError(
        f"{_where(function, attr)} ({type_name}) must be a real scalar, got {type(v).__name__}")


def _cast_int(v, type_name: str, function: str, attr: str):
    x = _as_python_number(v, function, attr, type_name)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{_where(function, attr)} ({type_name}) got non-finite value {x!r}")
        if not x.is_integer():
            raise ValueError(
                f"{_where(function, attr)} ({type_name}) got {x!r}, which has a fractional part")
        x = int(x)
    lo, hi = _INT_RANGES[type_name]
    if not lo <= x <= hi:
        raise ValueError(
            f"{_where(function, attr)} ({type_name}) got {x}, outside the range [{lo}, {hi}]")
    if x > _JAX_UINT64_MAX:
        raise ValueError(
            f"{_where(function, attr)} (uint64) got {x}: jax.ffi.ffi_call cannot lower uint64 "
            f"attributes above 2**63-1 (JAX builds the MLIR attribute from an int64); declare "
            f"the attribute int64 and pass the same bits as {x - 2**64}")
    return _INT_TYPES[type_name](x)


def _cast_bool(v, function: str, attr: str):
    x = _as_python_number(v, function, attr, "bool")
    if x not in (0, 1):  # also catches nan (nan != 0 and nan != 1)
        raise ValueError(
            f"{_where(function, attr)} (bool) got {v!r}; expected True/False (or 0/1)")
    return np.bool_(bool(x))


def _to_float(v, type_name: str, function: str, attr: str) -> float:
    x = _as_python_number(v, function, attr, type_name)
    try:
        return float(x)
    except OverflowError:
        raise ValueError(
            f"{_where(function, attr)} ({type_name}) got {x}, too large for a float") from None


def _cast_float(v, type_name: str, function: str, attr: str):
    x = _to_float(v, type_name, function, attr)
    with np.errstate(over="ignore"):
        y = _FLOAT_TYPES[type_name](x)
    if math.isfinite(x) and not np.isfinite(y):
        raise ValueError(
            f"{_where(function, attr)} ({type_name}) got {x!r}, outside the range of {type_name}")
    return y


def float_to_float16_bits(x: float) -> int:
    """IEEE binary16 bits of ``x`` (round to nearest even), as an int."""
    with np.errstate(over="ignore"):
        return int(np.float16(x).view(np.uint16))


def _bfloat16_bits_manual(x: float) -> int:
    """bfloat16 bits of ``x`` by rounding float32 bits to nearest even."""
    with np.errstate(over="ignore"):
        f32 = np.float32(x)
    (bits,) = struct.unpack("<I", struct.pack("<f", float(f32)))
    if math.isnan(float(f32)):
        return ((bits >> 16) & 0x8000) | 0x7FC0  # quiet NaN, sign kept
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF


try:  # ml_dtypes ships with jax; keep a pure-NumPy fallback all the same.
    import ml_dtypes as _ml_dtypes  # type: ignore
except Exception:  # pragma: no cover - depends on the environment
    _ml_dtypes = None


def float_to_bfloat16_bits(x: float) -> int:
    """bfloat16 bits of ``x`` (round to nearest even), as an int.

    Uses ``ml_dtypes.bfloat16`` when installed, else rounds the float32 bits
    itself (same result: float64 -> float32 -> bfloat16, nearest even).
    """
    if _ml_dtypes is not None:
        with np.errstate(over="ignore"):
            # Go through float32 first so both paths round identically.
            return int(np.array(np.float32(x)).astype(_ml_dtypes.bfloat16).view(np.uint16))
    return _bfloat16_bits_manual(x)


def _cast_half(v, type_name: str, function: str, attr: str):
    if isinstance(v, np.uint16):  # already raw bits
        return v
    if type_name == "float16" and isinstance(v, np.float16):
        return v.view(np.uint16)
    if (type_name == "bfloat16" and _ml_dtypes is not None
            and isinstance(v, _ml_dtypes.bfloat16)):
        return np.array(v).view(np.uint16)[()]
    x = _to_float(v, type_name, function, attr)
    if type_name == "float16":
        bits = float_to_float16_bits(x)
        is_inf = (bits & 0x7FFF) == 0x7C00
        finite_max = 65504.0
    else:
        bits = float_to_bfloat16_bits(x)
        is_inf = (bits & 0x7FFF) == 0x7F80
        finite_max = 3.3895313892515355e38
    if math.isfinite(x) and is_inf:
        raise ValueError(
            f"{_where(function, attr)} ({type_name}) got {x!r}, outside the range of "
            f"{type_name} (largest finite value {finite_max:g})")
    return np.uint16(bits)


def cast_attr(value, type_name: str, function: str = "?", attr: str = "?"):
    """Cast ``value`` to the NumPy scalar the handler expects for ``type_name``.

    Raises ``ValueError`` for a value the type cannot represent (out of range,
    fractional or non-finite for an integer type, finite but overflowing for a
    float type) and ``TypeError`` for a non-scalar. Messages name the function
    and the attribute.
    """
    v = _scalar(value, function, attr, type_name)
    if type_name in _INT_TYPES:
        return _cast_int(v, type_name, function, attr)
    if type_name in _FLOAT_TYPES:
        return _cast_float(v, type_name, function, attr)
    if type_name == "bool":
        return _cast_bool(v, function, attr)
    if type_name in _HALF_TYPES:
        return _cast_half(v, type_name, function, attr)
    raise TypeError(f"{_where(function, attr)} has unknown attribute type {type_name!r}")
