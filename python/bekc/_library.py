"""A bekc library in this process: dlopen()ed once, its handler symbols
checked to be its own (not a dependency's), and turned into the PyCapsules
``jax.ffi.register_ffi_target`` takes. dlopen's errors are told in the
user's terms (the undefined symbol, demangled; the library not found).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import tempfile
from typing import Optional

from ._errors import LibraryLoadError, ManifestError

def _demangle(symbol: str) -> str:
    """The C++ spelling of a mangled name (libstdc++'s __cxa_demangle), or the name."""
    if not symbol.startswith("_Z"):
        return symbol
    try:
        cxx = ctypes.CDLL("libstdc++.so.6")
        libc = ctypes.CDLL(None)
    except OSError:
        return symbol
    fn = cxx.__cxa_demangle
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.POINTER(ctypes.c_int)]
    status = ctypes.c_int(-1)
    out = fn(symbol.encode(), None, None, ctypes.byref(status))
    if not out:
        return symbol
    try:
        return ctypes.string_at(out).decode() if status.value == 0 else symbol
    finally:
        libc.free.argtypes = [ctypes.c_void_p]
        libc.free(ctypes.c_void_p(out))


def _load_hint(error: str) -> str:
    """What dlopen's error itself says, in the user's terms: the undefined
    symbol demangled, or the shared library that was not found."""
    m = re.search(r"undefined symbol: (\S+)", error)
    if m:
        symbol = m.group(1)
        plain = _demangle(symbol)
        named = f"{plain} ({symbol})" if plain != symbol else symbol
        hint = (f" The library uses {named}, which neither it nor the libraries it "
                f"loads define.")
        if symbol.startswith(("cuda", "__cuda")):
            hint += _CUDART_HINT.format(what="the CUDA runtime this process loaded is older "
                                             "than the toolkit that built the library")
        return hint
    m = re.search(r"(\S+\.so[.0-9]*): cannot open shared object file", error)
    if m:
        hint = (f" The library needs {m.group(1)}, which the dynamic loader did not find "
                f"(it looks in the library's RPATH, LD_LIBRARY_PATH and ld.so's cache).")
        if m.group(1).startswith("libcudart.so"):
            hint += _CUDART_HINT.format(what="the toolkit that built it is gone from where "
                                             "the library's RUNPATH says")
        return hint
    return ""


# docs/cli.md, "--cudart": a library linked with the shared CUDA runtime.
_CUDART_HINT = (" It links the shared CUDA runtime, and {what}: rebuild it with the static "
                "one (`bekc build --cudart=static`, or extra_cuda_cflags=['-cudart=static'] "
                "in a loader).")


class LoadedLibrary:
    """A dlopen()ed library: the handle (kept alive for the life of the
    process), the path given to dlopen and that file's (st_dev, st_ino), to
    tell the library's own symbols from those of its dependencies."""

    __slots__ = ("handle", "open_path", "file_id")

    def __init__(self, handle: ctypes.CDLL, open_path: str, file_id: tuple) -> None:
        self.handle = handle
        self.open_path = open_path
        self.file_id = file_id


def dlopen(lib_path: str, sha: str, st: os.stat_result, path_is_stale: bool) -> LoadedLibrary:
    """dlopen the library at ``lib_path``, whose fstat is ``st``.

    ``path_is_stale``: other bytes were dlopen()ed from this path before, and
    dlopen() would return their handle; the new bytes are loaded from a
    private copy instead.
    """
    open_path = lib_path
    if path_is_stale:
        tmpdir = tempfile.mkdtemp(prefix=f"bekc-{sha[:16]}-")
        open_path = os.path.join(tmpdir, os.path.basename(lib_path))
        shutil.copy2(lib_path, open_path)
        st = os.stat(open_path)
    try:
        lib = ctypes.CDLL(open_path, mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2))
    except OSError as e:
        raise LibraryLoadError(
            f"cannot load bekc library {lib_path}: {e}.{_load_hint(str(e))}") from None
    return LoadedLibrary(lib, open_path, (st.st_dev, st.st_ino))


class _DlInfo(ctypes.Structure):
    """``Dl_info`` of <dlfcn.h>, filled in by ``dladdr``."""
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


@functools.lru_cache(maxsize=1)
def symbol_api():
    """(dlsym, PyCapsule_New, dladdr) as private ctypes prototypes, or None off POSIX."""
    try:
        libc = ctypes.CDLL(None)
        dlsym = libc.dlsym
        dlsym.restype = ctypes.c_void_p
        dlsym.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
        dladdr = libc.dladdr
        dladdr.restype = ctypes.c_int
        dladdr.argtypes = (ctypes.c_void_p, ctypes.POINTER(_DlInfo))
        capsule_new = ctypes.PYFUNCTYPE(
            ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
                ("PyCapsule_New", ctypes.pythonapi))
        return (dlsym, capsule_new, dladdr)
    except (AttributeError, OSError, TypeError):
        return None


def _defined_in(fname: Optional[bytes], open_path: str, file_id: tuple) -> bool:
    """Whether ``dladdr``'s ``dli_fname`` is the file dlopen()ed as ``open_path``.

    The dynamic linker records the path it was given, so the names usually
    match; otherwise (the same file mapped earlier under another name) the
    device and inode decide.
    """
    if not fname:
        return False
    name = os.fsdecode(fname)
    if name == open_path:
        return True
    try:
        st = os.stat(name)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == file_id


def check_symbols(loaded: LoadedLibrary, lib_path: str, manifest: dict, path: str) -> None:
    """Every target's symbol must be defined in the library itself.

    dlsym() on a library handle also searches its dependencies (libc's
    ``abort`` or ``free`` would be found), so the address it returns is
    checked with dladdr() to lie in the dlopen()ed file.
    """
    api = symbol_api()
    if api is None:  # pragma: no cover - non-POSIX
        raise LibraryLoadError(f"cannot check the symbols of bekc library {lib_path}: this "
                               f"platform offers no dlsym/dladdr")
    dlsym, _, dladdr = api
    library, open_path, file_id = loaded.handle, loaded.open_path, loaded.file_id
    info = _DlInfo()
    for i, t in enumerate(manifest["targets"]):
        sym = t["symbol"]
        addr = dlsym(library._handle, sym.encode())
        if not addr:
            raise LibraryLoadError(
                f"bekc library {lib_path} has no symbol {sym!r} (target {t['name']!r}); "
                f"the manifest and library do not belong together")
        found = dladdr(addr, ctypes.byref(info)) != 0
        if not (found and _defined_in(info.dli_fname, open_path, file_id)):
            where = os.fsdecode(info.dli_fname) if found and info.dli_fname else "no known file"
            raise ManifestError(
                f"{path}: 'targets[{i}].symbol' {sym!r} is not defined in the library "
                f"{lib_path} itself: the dynamic linker found it in {where}. A manifest may "
                f"name only handlers that its own library defines.")


def capsules(library: ctypes.CDLL, library_path: str, targets) -> list:
    """One PyCapsule per target handler, like ``jax.ffi.pycapsule(getattr(lib, sym))``.

    The capsule is the same (unnamed, no destructor, the symbol's address);
    going through dlsym directly avoids building a ctypes function object per
    symbol, which dominates loading a library of hundreds of targets.
    """
    api = symbol_api()
    out = []
    for t in targets:
        sym = t["symbol"]
        if api is not None:
            addr = api[0](library._handle, sym.encode())
            cap = api[1](addr, None, None) if addr else None
        else:  # pragma: no cover - non-POSIX
            import jax
            fn = getattr(library, sym, None)
            cap = jax.ffi.pycapsule(fn) if fn is not None else None
        if cap is None:
            raise LibraryLoadError(
                f"bekc library {library_path} has no symbol {sym!r} (target {t['name']!r}); "
                f"the manifest and library do not belong together")
        out.append(cap)
    return out
