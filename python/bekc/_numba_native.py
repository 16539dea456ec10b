"""``libbekc_numba.so``, the compiled half of ``bekc.numba_cuda_kernel`` and
``bekc.numba_cuda_callable`` (``runtime/numba/bekc_numba.cpp``): where it is
(:func:`find_numba_library`), and its ctypes bridge (:class:`_Native`), which
loads it once per process, registers its two FFI targets with JAX, and adds
the launch and callable entries its handlers run.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, List, Optional, Sequence, Tuple

from ._errors import BekcError, LibraryLoadError

__all__ = ["find_numba_library", "LAUNCH_TARGET", "CALL_TARGET"]

LAUNCH_TARGET = "bekc.numba_cuda_kernel"
CALL_TARGET = "bekc.numba_cuda_callable"
_ABI_VERSION = 2
_LIBRARY_NAME = "libbekc_numba.so"

_LOCK = threading.RLock()
_NATIVE: Optional["_Native"] = None


def find_numba_library() -> str:
    """Path of ``libbekc_numba.so``: ``$BEKC_NUMBA_LIBRARY``, the package's
    ``lib/`` (an installed tree), the directory of the ``bekc`` binary (a
    build tree), then the install prefix that binary belongs to (a package
    installed with pip next to an installed bekc)."""
    env = os.environ.get("BEKC_NUMBA_LIBRARY", "")
    if env:
        if os.path.isfile(env):
            return os.path.abspath(env)
        raise LibraryLoadError(f"$BEKC_NUMBA_LIBRARY is {env!r}, which is not a file")
    tried = []
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "lib", _LIBRARY_NAME)]
    try:
        from ._binary import find_binary, libraries_beside
        candidates += libraries_beside(os.path.realpath(find_binary()), _LIBRARY_NAME)
    except BekcError as e:
        tried.append(f"next to the bekc binary ({e})")
    for c in candidates:
        if os.path.isfile(c):
            return c
        tried.append(c)
    raise LibraryLoadError(
        f"cannot find {_LIBRARY_NAME}, which bekc.numba_cuda_kernel needs. Looked at: "
        + "; ".join(tried) + ". Build it with `cmake --build build --target bekc_numba` "
        "(it lands beside build/bekc), install bekc, or set BEKC_NUMBA_LIBRARY=/path/to/it.")


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_uint64),
                             ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


class _Native:
    """The loaded library, with its two FFI targets registered with JAX."""

    def __init__(self, path: str) -> None:
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise LibraryLoadError(f"cannot load {path}: {e}") from e
        try:
            version = lib.bekc_numba_abi_version()
        except AttributeError:
            raise LibraryLoadError(f"{path} is not libbekc_numba (it has no "
                                   f"bekc_numba_abi_version)") from None
        if version != _ABI_VERSION:
            raise LibraryLoadError(
                f"{path} speaks ABI {version}, this bekc package {_ABI_VERSION}: rebuild it "
                f"from the same bekc checkout")
        lib.bekc_numba_add_launch.restype = ctypes.c_int64
        lib.bekc_numba_add_launch.argtypes = (
            ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32),
            ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32, ctypes.c_int, ctypes.c_int64,
            ctypes.c_int64, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32),
            ctypes.c_char_p, ctypes.c_size_t)
        lib.bekc_numba_launch_stats.restype = ctypes.c_int64
        lib.bekc_numba_launch_stats.argtypes = (ctypes.c_int64, ctypes.POINTER(ctypes.c_int64))
        for symbol in ("bekc_numba_allow_vmap", "bekc_numba_launch_stream"):
            if not hasattr(lib, symbol):
                raise LibraryLoadError(f"{path} predates {symbol}: rebuild it from the same bekc "
                                       f"checkout (cmake --build build --target bekc_numba)")
        lib.bekc_numba_allow_vmap.restype = ctypes.c_int
        lib.bekc_numba_allow_vmap.argtypes = (ctypes.c_int64,)
        lib.bekc_numba_launch_stream.restype = ctypes.c_uint64
        lib.bekc_numba_launch_stream.argtypes = (ctypes.c_int64,)
        lib.bekc_numba_add_callable.restype = ctypes.c_int64
        lib.bekc_numba_add_callable.argtypes = (ctypes.c_char_p, _CALLBACK, ctypes.c_int64,
                                                ctypes.c_int64)
        self.path = path
        self.lib = lib
        self.callbacks: List[Any] = []  # ctypes callbacks must outlive every call

        import jax
        for target, symbol in ((LAUNCH_TARGET, lib.bekc_numba_launch),
                               (CALL_TARGET, lib.bekc_numba_call)):
            try:
                jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(symbol), platform="CUDA")
            except Exception as e:
                raise LibraryLoadError(
                    f"jax.ffi.register_ffi_target({target!r}, platform='CUDA') failed: {e}") from e

    def add_launch(self, name: str, handle: int, grid, block, shared_mem: int, cooperative: bool,
                   dtypes: Sequence[int], ranks: Sequence[int], num_args: int,
                   vmap: bool = False) -> int:
        n = len(dtypes)
        error = ctypes.create_string_buffer(512)
        id_ = self.lib.bekc_numba_add_launch(
            name.encode(), ctypes.c_void_p(handle), (ctypes.c_uint32 * 3)(*grid),
            (ctypes.c_uint32 * 3)(*block), int(shared_mem), int(bool(cooperative)), num_args,
            n - num_args, (ctypes.c_int32 * n)(*dtypes), (ctypes.c_int32 * n)(*ranks),
            error, len(error))
        if id_ < 0:
            raise BekcError(error.value.decode(errors="replace"))
        if vmap and self.lib.bekc_numba_allow_vmap(id_) != 0:
            raise BekcError(f"{name}: libbekc_numba lost entry {id_}")
        return int(id_)

    def launch_stats(self, id_: int) -> Tuple[int, int]:
        captured = ctypes.c_int64(0)
        launches = self.lib.bekc_numba_launch_stats(id_, ctypes.byref(captured))
        return int(launches), int(captured.value)

    def launch_stream(self, id_: int) -> int:
        return int(self.lib.bekc_numba_launch_stream(id_))

    def add_callable(self, name: str, callback, num_args: int, num_rets: int) -> int:
        c_callback = _CALLBACK(callback)
        id_ = self.lib.bekc_numba_add_callable(name.encode(), c_callback, num_args, num_rets)
        if id_ < 0:
            raise BekcError(f"{name}: libbekc_numba refused the callable")
        self.callbacks.append(c_callback)
        return int(id_)


def _native() -> _Native:
    global _NATIVE
    with _LOCK:
        if _NATIVE is None:
            _NATIVE = _Native(find_numba_library())
        return _NATIVE
