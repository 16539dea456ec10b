"""``libbekc_lookup.so``: ``bekc build --json`` answered inside this process
when the local cache holds the build, so a warm load starts no process.

The library is the binary's own lookup (``lookup/bekc_lookup.cpp``, which
runs ``lib/driver``'s phases of a hit): the same argument vector, the same
checks of the entry, the same hit counted in ``bekc stats`` and the build
log. It answers hits only; on anything else (a miss, an error, ``-v``,
``--force``, ...) it says "not handled" and :func:`~bekc._run.run_bekc`
runs the binary as before, so every miss, message and exit code stays the
binary's.

Only the library that belongs to the binary being run is used: the one
beside it (a build tree), the one of its install prefix, or the package's
own ``lib/`` when that binary is the package's (a wheel, an installed tree).
``$BEKC_LOOKUP_LIBRARY`` names another; ``BEKC_IN_PROCESS_LOOKUP=0`` turns the
lookup off. A library that is missing, fails to load or speaks another ABI is
skipped silently: the binary answers.

``import bekc`` opens the library of the binary it finds (:func:`preload`),
as a package with a native core opens it on import, so that the process's
first load does not pay the ``dlopen``; a later load whose binary differs
opens that one's library then.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Dict, Optional, Sequence, Tuple

from . import _binary

__all__ = ["warm_hit", "cache_choice", "lookup_library_for", "preload"]

_LIBRARY_NAME = "libbekc_lookup.so"
_ABI_VERSION = 1
_HIT = 0

_LOCK = threading.Lock()
_LOADED: Dict[str, Optional["_Lookup"]] = {}  # library path -> loaded, or None: unusable


class _Lookup:
    def __init__(self, path: str) -> None:
        # PyDLL keeps the GIL during the call: no Python thread changes the
        # environment (putenv) while the lookup reads it. The library
        # serializes its calls itself as well.
        lib = ctypes.PyDLL(path)
        if lib.bekc_lookup_abi_version() != _ABI_VERSION:
            raise OSError(f"{path}: another ABI")
        lib.bekc_lookup_v1.restype = ctypes.c_int
        lib.bekc_lookup_v1.argtypes = (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.POINTER(ctypes.c_void_p),
                                       ctypes.POINTER(ctypes.c_void_p))
        lib.bekc_lookup_free.restype = None
        lib.bekc_lookup_free.argtypes = (ctypes.c_void_p,)
        # Absent from a library older than the query: the binary answers it.
        self.cache_query = getattr(lib, "bekc_lookup_cache_v1", None)
        if self.cache_query is not None:
            self.cache_query.restype = ctypes.c_int
            self.cache_query.argtypes = (ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
        self.lib = lib

    def cache(self, cache_dir_flag: Optional[str]) -> Optional[str]:
        """``bekc config --json``'s "cache" member, as JSON text, or None."""
        if self.cache_query is None:
            return None
        flag = None if cache_dir_flag is None else os.fsencode(cache_dir_flag)
        if flag is not None and b"\0" in flag:
            return None
        out = ctypes.c_void_p()
        if self.cache_query(flag, ctypes.byref(out)) != _HIT:
            return None
        try:
            return ctypes.string_at(out).decode("utf-8", "replace")
        finally:
            self.lib.bekc_lookup_free(out)

    def __call__(self, argv: Sequence[str]) -> Optional[Tuple[str, str]]:
        encoded = [os.fsencode(a) for a in argv]
        if any(b"\0" in a for a in encoded):  # the binary's spawn refuses these
            return None
        c_argv = (ctypes.c_char_p * len(encoded))(*encoded)
        json_out, messages = ctypes.c_void_p(), ctypes.c_void_p()
        rc = self.lib.bekc_lookup_v1(len(encoded), c_argv, ctypes.byref(json_out),
                                     ctypes.byref(messages))
        if rc != _HIT:
            return None
        try:
            return (ctypes.string_at(json_out).decode("utf-8", "replace"),
                    ctypes.string_at(messages).decode("utf-8", "replace"))
        finally:
            self.lib.bekc_lookup_free(json_out)
            self.lib.bekc_lookup_free(messages)


def _is_packages_binary(real_binary: str) -> bool:
    """Whether the binary is the one this package was installed with."""
    own = [_binary.bundled_binary_path(), _binary.wheel_binary_path()]
    return any(p and os.path.realpath(p) == real_binary for p in own)


def lookup_library_for(binary: str) -> Optional[str]:
    """The ``libbekc_lookup.so`` built with ``binary``, or None."""
    env = os.environ.get("BEKC_LOOKUP_LIBRARY", "")
    if env:
        return env if os.path.isfile(env) else None
    real = os.path.realpath(binary)
    for c in _binary.libraries_beside(real, _LIBRARY_NAME):
        if os.path.isfile(c):
            return c
    # A wheel: asked last, since reading the wheel's file list takes
    # milliseconds (find_binary has read it already unless $BEKC is set).
    own = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", _LIBRARY_NAME)
    if os.path.isfile(own) and _is_packages_binary(real):
        return own
    return None


def _loaded(path: str) -> Optional[_Lookup]:
    with _LOCK:
        if path not in _LOADED:
            try:
                _LOADED[path] = _Lookup(path)
            except (OSError, AttributeError):  # unloadable, not the library, another ABI
                _LOADED[path] = None
        return _LOADED[path]


def preload() -> None:
    """Open the lookup library of the binary :func:`~bekc.find_binary` finds
    now, if there is one and the lookup is on; never raises (no binary, a bad
    ``$BEKC``, an unloadable library: the first load finds out as before)."""
    if os.environ.get("BEKC_IN_PROCESS_LOOKUP", "") == "0":
        return
    try:
        path = lookup_library_for(_binary.find_binary())
    except Exception:  # BinaryNotFoundError, an unreadable wheel RECORD, ...
        return
    if path:
        _loaded(path)


def warm_hit(argv: Sequence[str]) -> Optional[Tuple[str, str]]:
    """(stdout, stderr) of ``argv`` (a ``bekc build --json`` command) when the
    local cache holds the build, answered in this process; None when the
    binary must run."""
    if os.environ.get("BEKC_IN_PROCESS_LOOKUP", "") == "0":
        return None
    if len(argv) < 2 or argv[1] != "build":
        return None
    path = lookup_library_for(argv[0])
    lookup = _loaded(path) if path else None
    if lookup is None:
        return None
    found = lookup(argv)
    if found is None:
        return None
    json_line, messages = found
    return json_line + "\n", messages


def cache_choice(binary: str, cache_dir_flag: Optional[str]) -> Optional[str]:
    """``binary config --json [--cache-dir=FLAG]``'s "cache" member as JSON
    text, answered in this process by the lookup library built with
    ``binary``; None when the binary must answer (no library, the lookup
    turned off, a bekc.conf with errors)."""
    if os.environ.get("BEKC_IN_PROCESS_LOOKUP", "") == "0":
        return None
    path = lookup_library_for(binary)
    lookup = _loaded(path) if path else None
    return lookup.cache(cache_dir_flag) if lookup is not None else None
