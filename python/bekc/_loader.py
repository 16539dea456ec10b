"""``bekc.load``: read a manifest, check the library, register its FFI targets.

Registration is process-global (XLA cannot unregister a target), so this module
keeps one registry of every target name it registered, guarded by a lock:

* loading the same library again (same SHA-256, or the same cache key, with the
  same target names and symbols) returns the existing :class:`Module` and
  registers nothing;
* a different library claiming an already registered name raises
  :class:`~bekc.TargetConflictError` before anything is registered.

``replace=True`` (brainevent's parameter) keeps these rules. XLA offers no way
to re-point a registered target at new code: jaxlib's CPU registry rejects a
second handler under a registered name, its CUDA registry keeps the first one
without a word, and every compiled executable holds the handler it was built
with. brainevent 0.2.1 refuses such a replacement too. So with ``replace=True``
the same library (same bytes or same cache key) is again a no-op, and a
changed one raises :class:`~bekc.TargetConflictError` saying that the
replacement cannot be done and how to load the new code under another name.

Targets whose platform is ``"CUDA"`` are registered even when the installed
jaxlib has no CUDA backend: ``jax.ffi.register_ffi_target`` then only queues
them (jaxlib keeps them until a CUDA backend appears), and calling one on the
CPU fails inside XLA with "No FFI handler registered for <name> on a platform
Host". Loading never fails for that reason alone.
"""

from __future__ import annotations

import ctypes
import difflib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._attrs import ATTR_TYPES, cast_attr
from ._errors import (
    LibraryHashMismatchError,
    LibraryLoadError,
    ManifestError,
    RegistrationError,
    TargetConflictError,
)

__all__ = ["load", "Module", "KernelFunction", "registered_targets"]

SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"
# A manifest is a few KiB per target; a file larger than this is not one, and
# is refused before it is read (see docs/manifest.md, "What the loader checks").
MAX_MANIFEST_BYTES = 16 << 20
# The handler symbols bekc generates for function F (lib/codegen/wrapper.cpp:
# handler_symbol, handler_symbol_nograph); a manifest may name no others.
SYMBOL_PREFIX = "bekc_ffi_"
NOGRAPH_SUFFIX = "_nograph"
PLATFORMS = ("CUDA", "cpu")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `bekc build --target-prefix`'s rule: any text without a control character
# (brainevent takes any module name, "my-kernels" included).
_TARGET_PREFIX = re.compile(r"[^\x00-\x1f\x7f]+")
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
_ATTR_TOKEN = re.compile(r"attr\.([A-Za-z_][A-Za-z0-9_]*):([a-z0-9]+)")
_SPEC_WORDS = frozenset(("arg", "ret", "stream"))
# Files are opened without blocking (a FIFO), without becoming a controlling
# terminal, and closed on exec.
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0))

_LOCK = threading.RLock()
# target name -> _Claim of the library that registered it (this process).
_REGISTRY: Dict[str, "_Claim"] = {}
# library sha256 -> ctypes.CDLL (kept alive for the life of the process).
_LIBS_BY_SHA: Dict[str, ctypes.CDLL] = {}
# library sha256 -> (path given to dlopen, (st_dev, st_ino) of that file), to
# tell the library's own symbols from those of its dependencies.
_LIB_FILES: Dict[str, Tuple[str, tuple]] = {}
# absolute library path -> sha256 of what was dlopen()ed from it.
_SHA_BY_LOADED_PATH: Dict[str, str] = {}
# (sha256, target signature) -> Module
_MODULES: Dict[Tuple[str, tuple], "Module"] = {}
# abs manifest path -> (manifest stat sig, library path, library stat sig, Module)
_LOAD_MEMO: Dict[str, tuple] = {}
# (abs path, dev, ino, size, mtime_ns) -> sha256
_SHA_MEMO: Dict[tuple, str] = {}


class _Claim:
    __slots__ = ("sha256", "key", "symbol", "platform", "library_path", "module")

    def __init__(self, sha256, key, symbol, platform, library_path, module):
        self.sha256 = sha256
        self.key = key
        self.symbol = symbol
        self.platform = platform
        self.library_path = library_path
        self.module = module

    def same_handler(self, other: "_Claim") -> bool:
        """True when both claims install the same handler for a target name.

        Same symbol and platform, from the same library bytes or from a library
        built from the same cache key (a rebuild after ``bekc cache clear`` may
        not be byte-identical but is the same program).
        """
        if self.symbol != other.symbol or self.platform != other.platform:
            return False
        return self.sha256 == other.sha256 or (bool(self.key) and self.key == other.key)


def registered_targets() -> Dict[str, str]:
    """Target names registered by bekc in this process -> library path."""
    with _LOCK:
        return {name: c.library_path for name, c in _REGISTRY.items()}


def _stat_sig(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _sha256_fd(fd: int, path: str, st: os.stat_result) -> str:
    """SHA-256 of the open regular file ``fd`` (memoized by path and stat)."""
    memo_key = (path,) + _stat_sig(st)
    sha = _SHA_MEMO.get(memo_key)
    if sha is None:
        h = hashlib.sha256()
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            h.update(chunk)
        sha = h.hexdigest()
        _SHA_MEMO[memo_key] = sha
    return sha


def _resolve_manifest_path(manifest_or_dir) -> str:
    path = os.path.abspath(os.fspath(manifest_or_dir))
    if os.path.isdir(path):
        path = os.path.join(path, MANIFEST_NAME)
    return path


def _file_kind(st: os.stat_result) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(st.st_mode):
            return kind
    return "not a regular file"


def _require_regular(st: os.stat_result, what: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise ManifestError(f"{what} is {_file_kind(st)}, not a regular file")


def _read_manifest_bytes(path: str) -> Tuple[bytes, os.stat_result]:
    """The manifest's bytes and the fstat of the file they were read from.

    Only a regular file of at most MAX_MANIFEST_BYTES is read: a FIFO,
    /dev/zero or a directory passed as the manifest neither blocks nor fills
    memory. It is checked with stat before it is opened (so no device is
    opened) and with fstat after (in case it was swapped in between).
    """
    what = f"bekc manifest {path}"
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise ManifestError(f"bekc manifest not found: {path}") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise ManifestError(f"cannot read bekc manifest {path}: {e}") from None
    _require_regular(before, what)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as e:
        raise ManifestError(f"cannot read bekc manifest {path}: {e}") from None
    try:
        st = os.fstat(fd)
        _require_regular(st, what)
        limit = f"a bekc manifest is at most {MAX_MANIFEST_BYTES >> 20} MiB"
        if st.st_size > MAX_MANIFEST_BYTES:
            raise ManifestError(f"{what} is {st.st_size} bytes: {limit}")
        # Sized from fstat (a 1 MiB buffer per read costs an mmap), at least a
        # page for files that report no size (procfs).
        step = max(st.st_size + 1, 4096)
        chunks, left = [], MAX_MANIFEST_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, step))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:  # the file grew past the limit while being read
            raise ManifestError(f"{what} is over {MAX_MANIFEST_BYTES} bytes: {limit}")
    except OSError as e:
        raise ManifestError(f"cannot read bekc manifest {path}: {e}") from None
    finally:
        os.close(fd)
    return b"".join(chunks), st


def _read_manifest(path: str) -> Tuple[dict, os.stat_result]:
    data, st = _read_manifest_bytes(path)
    try:
        manifest = json.loads(data)
    except RecursionError:
        raise ManifestError(f"{path} is not a bekc manifest: its JSON is nested too deeply "
                            f"to be read") from None
    except ValueError as e:  # also UnicodeDecodeError
        raise ManifestError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict):
        raise ManifestError(f"{path}: a bekc manifest is a JSON object, got {_json_type(manifest)}")
    schema = manifest.get("schema")
    # type() is int, not isinstance: JSON true is a Python int too.
    if type(schema) is not int or schema != SCHEMA_VERSION:
        raise ManifestError(
            f"{path}: unsupported manifest schema {schema!r}; this loader (bekc "
            f"{_version()}) reads schema {SCHEMA_VERSION}. Rebuild with a matching "
            f"`bekc build`, or install the bekc Python package that ships with that binary.")
    _validate(manifest, path)
    return manifest, st


def _version() -> str:
    from . import __version__
    return __version__


_JSON_TYPES = {bool: "true/false", int: "an integer", float: "a number", str: "a string",
               list: "an array", dict: "an object", type(None): "null"}


def _json_type(value) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _got(value) -> str:
    """``value`` for an error message: its JSON type and a short repr."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{_json_type(value)} ({text})"


def _bad(path: str, field: str, problem: str) -> ManifestError:
    return ManifestError(f"{path}: '{field}' {problem}")


def _is_count(value) -> bool:
    return type(value) is int and value >= 0  # not bool: JSON true is no count


def _check_library_name(library, path: str) -> None:
    """``library`` must name a file in the manifest's own directory: a plain name."""
    if not isinstance(library, str) or not library:
        raise _bad(path, "library", f"must be a non-empty string, got {_got(library)}")
    if "/" in library or "\0" in library or library in (".", ".."):
        raise _bad(path, "library",
                   f"must be a plain file name in the manifest's own directory (no '/', not "
                   f"'.' or '..', no NUL), got {library!r}: bekc writes the library next to "
                   f"its manifest, and the loader opens nothing else")


def _validate(manifest: dict, path: str) -> None:
    """Check the type and range of every field the loader reads (ManifestError)."""
    for field in ("name", "library", "library_sha256", "targets"):
        if field not in manifest:
            raise ManifestError(f"{path}: manifest has no '{field}' field")
    name = manifest["name"]
    if not isinstance(name, str) or not name:
        raise _bad(path, "name", f"must be a non-empty string, got {_got(name)}")
    key = manifest.get("key")
    if key is not None and not isinstance(key, str):
        raise _bad(path, "key", f"must be a string (the cache key), got {_got(key)}")
    _check_library_name(manifest["library"], path)
    sha = manifest["library_sha256"]
    if not (isinstance(sha, str) and _SHA256_HEX.fullmatch(sha)):
        raise _bad(path, "library_sha256", f"must be 64 hex digits, got {_got(sha)}")
    targets = manifest["targets"]
    if not isinstance(targets, list):
        raise _bad(path, "targets", f"must be an array, got {_got(targets)}")
    seen: Dict[str, set] = {"name": set(), "function": set(), "symbol": set()}
    for i, t in enumerate(targets):
        _validate_target(t, i, path)
        for field, names in seen.items():
            if t[field] in names:
                raise _bad(path, f"targets[{i}].{field}", f"{t[field]!r} appears twice")
            names.add(t[field])


_TARGET_FIELDS = ("name", "symbol", "function", "platform", "num_args", "num_rets")
_TARGET_FIELD_SET = frozenset(_TARGET_FIELDS)


# Field paths in messages are formatted only when a check fails: this runs for
# every target of every manifest read (hundreds in one library).
def _validate_target(t, i: int, path: str) -> None:
    if not isinstance(t, dict):
        raise _bad(path, f"targets[{i}]", f"must be an object, got {_got(t)}")
    if not t.keys() >= _TARGET_FIELD_SET:
        field = next(f for f in _TARGET_FIELDS if f not in t)
        raise ManifestError(f"{path}: targets[{i}] has no '{field}' field")
    fn = t["function"]
    if not (isinstance(fn, str) and _IDENTIFIER.fullmatch(fn)):
        raise _bad(path, f"targets[{i}].function",
                   f"must be an ASCII C++ identifier, got {_got(fn)}")
    name = t["name"]
    if not (isinstance(name, str) and name.endswith("." + fn)
            and _TARGET_PREFIX.fullmatch(name, 0, len(name) - len(fn) - 1)):
        raise _bad(path, f"targets[{i}].name",
                   f"must be '<target_prefix>.{fn}' (a prefix without control characters), "
                   f"got {_got(name)}")
    symbol = t["symbol"]
    handler = SYMBOL_PREFIX + fn
    if not (isinstance(symbol, str) and (symbol == handler or symbol == handler + NOGRAPH_SUFFIX)):
        raise _bad(path, f"targets[{i}].symbol",
                   f"must be '{handler}' or '{handler}{NOGRAPH_SUFFIX}', the handlers bekc "
                   f"generates for function '{fn}'; got {_got(symbol)}")
    platform = t["platform"]
    if not (isinstance(platform, str) and platform in PLATFORMS):
        raise _bad(path, f"targets[{i}].platform",
                   f"must be one of {', '.join(map(repr, PLATFORMS))}, got {_got(platform)}")
    for field in ("num_args", "num_rets"):
        if not _is_count(t[field]):
            raise _bad(path, f"targets[{i}].{field}",
                       f"must be a non-negative integer, got {_got(t[field])}")
    spec_attrs = _validate_arg_spec(t, i, path) if "arg_spec" in t else []
    attrs = t.setdefault("attrs", spec_attrs)
    if attrs is spec_attrs:
        return  # taken from arg_spec, which was checked
    if not isinstance(attrs, list):
        raise _bad(path, f"targets[{i}].attrs", f"must be an array of objects, got {_got(attrs)}")
    names = set()
    for j, a in enumerate(attrs):
        if not (isinstance(a, dict) and "name" in a and "type" in a):
            raise _bad(path, f"targets[{i}].attrs[{j}]",
                       f"is a malformed attr entry {_got(a)}: it must be "
                       f"{{\"name\": ..., \"type\": ...}}")
        if not (isinstance(a["name"], str) and _IDENTIFIER.fullmatch(a["name"])):
            raise _bad(path, f"targets[{i}].attrs[{j}].name",
                       f"must be an identifier, got {_got(a['name'])}")
        if not (isinstance(a["type"], str) and a["type"] in ATTR_TYPES):
            raise _bad(path, f"targets[{i}].attrs[{j}].type",
                       f"of target {name!r} attribute {a['name']!r} has unknown type "
                       f"{a['type']!r} (known: {', '.join(sorted(ATTR_TYPES))})")
        if a["name"] in names:
            raise _bad(path, f"targets[{i}].attrs[{j}].name", f"{a['name']!r} appears twice")
        names.add(a["name"])
    if "arg_spec" in t and attrs != spec_attrs and [(a["name"], a["type"]) for a in attrs] != [
            (a["name"], a["type"]) for a in spec_attrs]:
        raise _bad(path, f"targets[{i}].attrs",
                   "does not match the attr.<name>:<type> tokens of its arg_spec")


def _validate_arg_spec(t: dict, i: int, path: str) -> List[dict]:
    """Check ``arg_spec`` against ``num_args``/``num_rets``; returns its attributes."""
    spec = t["arg_spec"]
    if not isinstance(spec, list):
        raise _bad(path, f"targets[{i}].arg_spec", f"must be an array of strings, got {_got(spec)}")
    attrs = []
    for j, tok in enumerate(spec):
        if isinstance(tok, str) and tok in _SPEC_WORDS:
            continue
        m = _ATTR_TOKEN.fullmatch(tok) if isinstance(tok, str) else None
        if m is None:
            raise _bad(path, f"targets[{i}].arg_spec[{j}]",
                       f"must be 'arg', 'ret', 'stream' or 'attr.<name>:<type>', got {_got(tok)}")
        if m.group(2) not in ATTR_TYPES:
            raise _bad(path, f"targets[{i}].arg_spec[{j}]",
                       f"has unknown attribute type {m.group(2)!r} (known: "
                       f"{', '.join(sorted(ATTR_TYPES))})")
        attrs.append({"name": m.group(1), "type": m.group(2)})
    for field, word in (("num_args", "arg"), ("num_rets", "ret")):
        n = spec.count(word)
        if n != t[field]:
            raise _bad(path, f"targets[{i}].{field}",
                       f"is {t[field]}, but arg_spec has {n} '{word}' tokens")
    if len({a["name"] for a in attrs}) != len(attrs):
        raise _bad(path, f"targets[{i}].arg_spec", "names an attribute twice")
    return attrs


def _target_signature(manifest: dict) -> tuple:
    return tuple(sorted((t["name"], t["symbol"], t["platform"]) for t in manifest["targets"]))


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
        return (f" The library uses {named}, which neither it nor the libraries it "
                f"loads define.")
    m = re.search(r"(\S+\.so[.0-9]*): cannot open shared object file", error)
    if m:
        return (f" The library needs {m.group(1)}, which the dynamic loader did not find "
                f"(it looks in the library's RPATH, LD_LIBRARY_PATH and ld.so's cache).")
    return ""


def _dlopen(lib_path: str, sha: str, manifest: dict, st: os.stat_result) -> ctypes.CDLL:
    """dlopen the library once per content hash and keep the handle alive.

    ``st`` is the fstat of the file that was hashed (at ``lib_path``).
    """
    lib = _LIBS_BY_SHA.get(sha)
    if lib is not None:
        return lib
    open_path = lib_path
    if _SHA_BY_LOADED_PATH.get(lib_path, sha) != sha:
        # dlopen() would return the stale handle already mapped from this path;
        # load the new bytes from a private copy instead.
        tmpdir = tempfile.mkdtemp(prefix=f"bekc-{sha[:16]}-")
        open_path = os.path.join(tmpdir, os.path.basename(lib_path))
        shutil.copy2(lib_path, open_path)
        st = os.stat(open_path)
    try:
        lib = ctypes.CDLL(open_path, mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2))
    except OSError as e:
        raise LibraryLoadError(
            f"cannot load bekc library {lib_path}: {e}.{_load_hint(str(e))}") from None
    _LIBS_BY_SHA[sha] = lib
    _LIB_FILES[sha] = (open_path, (st.st_dev, st.st_ino))
    _SHA_BY_LOADED_PATH.setdefault(lib_path, sha)
    return lib


class _DlInfo(ctypes.Structure):
    """``Dl_info`` of <dlfcn.h>, filled in by ``dladdr``."""
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_SYMBOL_API = None


def _symbol_api():
    """(dlsym, PyCapsule_New, dladdr) as private ctypes prototypes, or None off POSIX."""
    global _SYMBOL_API
    if _SYMBOL_API is None:
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
            _SYMBOL_API = (dlsym, capsule_new, dladdr)
        except (AttributeError, OSError, TypeError):
            _SYMBOL_API = False
    return _SYMBOL_API or None


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


def _check_symbols(library: ctypes.CDLL, sha: str, lib_path: str, manifest: dict,
                   path: str) -> None:
    """Every target's symbol must be defined in the library itself.

    dlsym() on a library handle also searches its dependencies (libc's
    ``abort`` or ``free`` would be found), so the address it returns is
    checked with dladdr() to lie in the dlopen()ed file.
    """
    api = _symbol_api()
    if api is None:  # pragma: no cover - non-POSIX
        raise LibraryLoadError(f"cannot check the symbols of bekc library {lib_path}: this "
                               f"platform offers no dlsym/dladdr")
    dlsym, _, dladdr = api
    open_path, file_id = _LIB_FILES[sha]
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


def _capsules(library: ctypes.CDLL, library_path: str, targets) -> list:
    """One PyCapsule per target handler, like ``jax.ffi.pycapsule(getattr(lib, sym))``.

    The capsule is the same (unnamed, no destructor, the symbol's address);
    going through dlsym directly avoids building a ctypes function object per
    symbol, which dominates loading a library of hundreds of targets.
    """
    api = _symbol_api()
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


def load(manifest_or_dir, *, register: bool = True, replace: bool = False) -> "Module":
    """Load a bekc build and register its FFI targets with JAX.

    ``manifest_or_dir`` is a ``manifest.json`` path or a directory holding one.
    Checks the manifest (every field it reads; the library must be a file of
    the manifest's directory with the recorded SHA-256, each symbol a handler
    bekc generates that the library itself defines: docs/manifest.md, "What
    the loader checks"; failures are :class:`~bekc.ManifestError`), loads the
    library with ``ctypes`` and registers every target under its manifest name
    (``<prefix>.<function>``). Loading the same library again is a no-op that
    returns the same :class:`Module`; another library claiming a registered
    name raises :class:`~bekc.TargetConflictError`. With ``register=False``
    nothing is registered (call :meth:`Module.register` later).
    ``replace=True`` asks for brainevent's replacement of registered targets;
    XLA cannot do it, so a changed library still raises
    :class:`~bekc.TargetConflictError` (see the module documentation).
    """
    path = _resolve_manifest_path(manifest_or_dir)
    with _LOCK:
        # Fast path: same manifest and library files as last time.
        memo = _LOAD_MEMO.get(path)
        if memo is not None:
            msig, lib_path, lsig, module = memo
            try:
                if _stat_sig(os.stat(path)) == msig and _stat_sig(os.stat(lib_path)) == lsig:
                    if register and not module.registered:
                        module.register(replace=replace)
                    return module
            except OSError:
                pass
            del _LOAD_MEMO[path]

        manifest, mst = _read_manifest(path)
        # A plain file name (checked by _read_manifest): a file of this directory.
        lib_path = os.path.join(os.path.dirname(path), manifest["library"])
        lst, actual = _hash_library(lib_path, path)
        expected = manifest["library_sha256"].lower()
        if actual != expected:
            raise LibraryHashMismatchError(
                f"library {lib_path} does not match its manifest {path}: manifest records "
                f"sha256 {expected}, the file has sha256 {actual}. The build output was "
                f"modified or is corrupt; rebuild it (`bekc build --force ...`, or "
                f"`bekc cache verify` for cache entries).",
                library=lib_path, expected=expected, actual=actual)

        module = _module_for(manifest, path, lib_path, actual, lst, register, replace)
        _LOAD_MEMO[path] = (_stat_sig(mst), lib_path, _stat_sig(lst), module)
        return module


def _hash_library(lib_path: str, path: str) -> Tuple[os.stat_result, str]:
    """(fstat, SHA-256) of the library, which must be a regular file."""
    try:
        fd = os.open(lib_path, _OPEN_FLAGS)
    except OSError as e:
        raise ManifestError(
            f"{path}: library {lib_path} named by the manifest cannot be read: {e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _bad(path, "library", f"names {lib_path}, which is {_file_kind(st)}, "
                                        f"not a regular file")
        return st, _sha256_fd(fd, lib_path, st)
    except OSError as e:
        raise ManifestError(
            f"{path}: library {lib_path} named by the manifest cannot be read: {e}") from None
    finally:
        os.close(fd)


def _module_for(manifest: dict, path: str, lib_path: str, sha: str, st: os.stat_result,
                register: bool, replace: bool = False) -> "Module":
    """The Module for a checked manifest; ``st`` is the fstat of the hashed library."""
    key = manifest.get("key") or ""
    sig = _target_signature(manifest)
    claims = {t["name"]: _Claim(sha, key, t["symbol"], t["platform"], lib_path, None)
              for t in manifest["targets"]}
    if register:
        _check_conflicts(claims, replace)
    # Reuse a module that already holds the same targets from an equivalent library.
    existing = _MODULES.get((sha, sig))
    if existing is None and key:
        existing = _MODULES.get(("key:" + key, sig))
    if existing is not None:
        if register and not existing.registered:
            existing.register(replace=replace)
        return existing
    lib = _dlopen(lib_path, sha, manifest, st)
    _check_symbols(lib, sha, lib_path, manifest, path)
    module = Module(manifest, path, lib_path, sha, lib)
    _MODULES[(sha, sig)] = module
    if key:
        _MODULES.setdefault(("key:" + key, sig), module)
    if register:
        module.register(replace=replace)
    return module


def _check_conflicts(claims: Dict[str, _Claim], replace: bool = False) -> None:
    conflicts = []
    for name, claim in claims.items():
        old = _REGISTRY.get(name)
        if old is not None and not old.same_handler(claim):
            conflicts.append((name, old, claim))
    if not conflicts:
        return
    name, old, new = conflicts[0]
    more = f" (and {len(conflicts) - 1} more target names)" if len(conflicts) > 1 else ""
    detail = ""
    if old.sha256 == new.sha256:
        detail = (f" Same library, different handler symbol ({old.symbol} vs {new.symbol}; "
                  f"e.g. a --no-cuda-graph manifest) or platform ({old.platform} vs {new.platform}).")
    # With replace=True the caller asked for exactly what XLA cannot do: say so first.
    lead = "cannot replace FFI target as replace=True asks: " if replace else ""
    why = ("XLA cannot re-point a registered target: the CPU registry rejects a second "
           "handler, the CUDA registry silently keeps the first, and compiled executables hold "
           "the old one (brainevent refuses this replacement too)." if replace else
           "XLA cannot replace a registered target.")
    raise TargetConflictError(
        f"{lead}FFI target {name!r}{more} is already registered from library "
        f"{old.library_path} (sha256 {old.sha256[:16]}...), and library {new.library_path} "
        f"(sha256 {new.sha256[:16]}...) claims the same name.{detail} {why} Rebuild one of "
        f"them under another prefix (`bekc build --target-prefix OTHER ...`, or "
        f"target_prefix='OTHER' / another name in load_cuda_inline), or restart the process "
        f"to pick up the new library.")


def _suggest(name: str, candidates) -> List[str]:
    """The closest candidate (difflib), else one that contains or is contained in ``name``."""
    close = difflib.get_close_matches(name, candidates, n=1)
    if close:
        return close
    low = name.lower()
    return [c for c in candidates if low and (low in c.lower() or c.lower() in low)][:1]


def _varying_axes(typeof, x) -> frozenset:
    """The manual mesh axes ``x`` varies over: ``manual_axis_type.varying``
    (JAX 0.9 and later), ``vma`` (JAX 0.6 to 0.8), else none."""
    try:
        aval = typeof(x)
    except TypeError:  # not an array JAX knows
        return frozenset()
    mat = getattr(aval, "manual_axis_type", None)
    if mat is not None:
        return frozenset(getattr(mat, "varying", ()) or ())
    return frozenset(getattr(aval, "vma", None) or ())


def _varying_like(results, arrays):
    """``results`` marked as varying over every manual mesh axis an input
    varies over. Inside ``jax.shard_map`` (with its default ``check_vma``) an
    ``ffi_call`` result carries no such type, so a loop whose carry goes
    through a kernel would change type between iterations."""
    import jax
    typeof = getattr(jax, "typeof", None)
    if typeof is None:  # a JAX without varying-manual-axes types
        return results
    axes = frozenset().union(*(_varying_axes(typeof, a) for a in arrays))
    if not axes:
        return results
    pcast, pvary = getattr(jax.lax, "pcast", None), getattr(jax.lax, "pvary", None)
    if pcast is None and pvary is None:
        return results

    def mark(r):
        missing = tuple(sorted(axes - _varying_axes(typeof, r), key=str))
        if not missing:
            return r
        return pcast(r, missing, to="varying") if pcast is not None else pvary(r, missing)

    if isinstance(results, (list, tuple)):
        return type(results)(mark(r) for r in results)
    return mark(results)


class KernelFunction:
    """A typed callable for one FFI target of a :class:`Module`.

    ``fn(*arrays, out=None, vmap_method=None, **attrs)`` checks the number of
    arrays, casts each attribute to its manifest type and calls
    ``jax.ffi.ffi_call(target, out, vmap_method=...)(*arrays, **attrs)``.
    ``out`` is a ``jax.ShapeDtypeStruct`` (or a list of them, one per output);
    left out, a one-output function returns an array shaped like its first input.
    """

    # __weakref__: jax.jit(mod.fn) keeps a weak reference to the callable.
    __slots__ = ("target", "name", "function", "platform", "num_args", "num_rets",
                 "attr_types", "_attr_names", "info", "__weakref__")

    def __init__(self, target: dict) -> None:
        self.info = target
        self.target = target["name"]
        self.name = target["name"]
        self.function = target["function"]
        self.platform = target["platform"]
        self.num_args = int(target["num_args"])
        self.num_rets = int(target["num_rets"])
        self.attr_types = {a["name"]: a["type"] for a in target["attrs"]}
        self._attr_names = tuple(self.attr_types)

    def __repr__(self) -> str:
        attrs = ", ".join(f"{n}: {t}" for n, t in self.attr_types.items())
        return (f"<bekc function {self.target} ({self.num_args} arrays -> {self.num_rets} "
                f"outputs{'; ' + attrs if attrs else ''}) [{self.platform}]>")

    def cast_attrs(self, attrs: Dict[str, Any]) -> Dict[str, Any]:
        """Check names and cast values; returns the kwargs for ``ffi_call``."""
        types = self.attr_types
        unknown = [k for k in attrs if k not in types]
        if unknown:
            k = unknown[0]
            close = _suggest(k, self._attr_names)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = ", ".join(self._attr_names) or "none"
            raise TypeError(
                f"{self.function}() got an unexpected attribute '{k}'{hint} "
                f"(attributes of {self.target}: {known})")
        missing = [k for k in self._attr_names if k not in attrs]
        if missing:
            raise TypeError(
                f"{self.function}() missing attribute{'s' if len(missing) > 1 else ''} "
                + ", ".join(f"'{m}' ({types[m]})" for m in missing))
        return {k: cast_attr(v, types[k], self.function, k) for k, v in attrs.items()}

    def _out_spec(self, arrays: Sequence[Any], out):
        if out is None:
            if self.num_rets != 1:
                raise TypeError(
                    f"{self.function}() has {self.num_rets} outputs: pass out=[jax.ShapeDtypeStruct"
                    f"(...), ...] with one entry per output")
            if not arrays:
                raise TypeError(
                    f"{self.function}() takes no input arrays, so its output cannot default to "
                    f"the first input's shape: pass out=jax.ShapeDtypeStruct(shape, dtype)")
            import jax
            a = arrays[0]
            shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
            if shape is None or dtype is None:
                import numpy as np
                arr = np.asarray(a)
                shape, dtype = arr.shape, arr.dtype
            return jax.ShapeDtypeStruct(tuple(shape), jax.dtypes.canonicalize_dtype(dtype))
        if isinstance(out, (list, tuple)):
            if len(out) != self.num_rets:
                raise TypeError(
                    f"{self.function}() has {self.num_rets} output{'s' if self.num_rets != 1 else ''}, "
                    f"but out lists {len(out)}")
            return list(out)
        if self.num_rets != 1:
            raise TypeError(
                f"{self.function}() has {self.num_rets} outputs: out must be a list of "
                f"{self.num_rets} jax.ShapeDtypeStruct, got one {type(out).__name__}")
        return out

    def call(self, arrays: Sequence[Any], attrs: Optional[Dict[str, Any]] = None, *,
             out=None, vmap_method: Optional[str] = None, **ffi_call_kwargs):
        """Explicit form of ``__call__`` (useful if an attribute is named ``out``)."""
        arrays = tuple(arrays)
        if len(arrays) != self.num_args:
            raise TypeError(
                f"{self.function}() takes {self.num_args} input array"
                f"{'s' if self.num_args != 1 else ''} ({self.target}), got {len(arrays)}")
        cast = self.cast_attrs(dict(attrs or {}))
        out_spec = self._out_spec(arrays, out)
        self._check_layouts(ffi_call_kwargs, arrays, out_spec)
        import jax
        results = jax.ffi.ffi_call(self.target, out_spec, vmap_method=vmap_method,
                                   **ffi_call_kwargs)(*arrays, **cast)
        return _varying_like(results, arrays)

    def _check_layouts(self, kwargs: Dict[str, Any], arrays, out_spec) -> None:
        """BE::Tensor reads every buffer as row-major, and XLA's buffers carry no
        layout the handler could check: another layout would be read transposed
        without a word, so only row-major ones (or None) are passed on. In
        jax.ffi.ffi_call's spelling (major-to-minor) row-major is (0, 1, ..., n-1)."""
        outs = out_spec if isinstance(out_spec, (list, tuple)) else [out_spec]
        for key, values in (("input_layouts", arrays), ("output_layouts", outs)):
            layouts = kwargs.get(key)
            if layouts is None:
                continue
            for i, (layout, value) in enumerate(zip(layouts, values)):
                ndim = len(getattr(value, "shape", ()))
                if layout is not None and tuple(layout) != tuple(range(ndim)):
                    raise ValueError(
                        f"{self.target}: {key}[{i}] = {tuple(layout)} is not row-major; "
                        f"BE::Tensor reads every buffer as row-major (C order), so pass "
                        f"None or {tuple(range(ndim))}")

    def __call__(self, *arrays, **kwargs):
        out = kwargs.pop("out", None) if "out" not in self.attr_types else None
        vmap_method = (kwargs.pop("vmap_method", None)
                       if "vmap_method" not in self.attr_types else None)
        return self.call(arrays, kwargs, out=out, vmap_method=vmap_method)


class Module:
    """A loaded bekc build: one library and its FFI targets.

    ``mod.<function>(*arrays, out=None, vmap_method=None, **attrs)`` calls a
    target (see :class:`KernelFunction`); ``mod["function"]`` or
    ``mod["prefix.function"]`` works for any name, including a function whose
    name is also an attribute of the module (``mod["path"]``). ``mod.targets``
    maps target names to their manifest entries, ``mod.manifest`` is the parsed
    manifest.

    brainevent's ``CompiledModule`` interface is here too: ``path`` (the
    library), ``function_names``, ``content_hash`` (``"sha256:"`` and the first
    16 hex digits of the library's SHA-256) and ``get_handler(name)`` (a ctypes
    function pointer to the function's FFI handler).
    """

    def __init__(self, manifest: dict, manifest_path: str, library_path: str,
                 library_sha256: str, library: ctypes.CDLL) -> None:
        self.manifest = manifest
        self.manifest_path = manifest_path
        self.library_path = library_path
        self.library_sha256 = library_sha256
        self.library = library  # the ctypes handle (kept alive by the registry too)
        self.name = manifest.get("name", "")
        self.targets = {t["name"]: t for t in manifest["targets"]}
        self.functions = {t["function"]: KernelFunction(t) for t in manifest["targets"]}
        self.platforms = tuple(sorted({t["platform"] for t in manifest["targets"]}))
        self.registered = False
        self._handlers: Dict[str, Any] = {}

    # -- brainevent's CompiledModule ------------------------------------------
    @property
    def path(self) -> str:
        """The shared library's path (brainevent's ``CompiledModule.path``)."""
        return self.library_path

    @property
    def function_names(self) -> List[str]:
        """The user function names, in manifest order."""
        return list(self.functions)

    @property
    def content_hash(self) -> str:
        """``"sha256:"`` plus the first 16 hex digits of the library's SHA-256,
        brainevent's format (the hash was checked against the manifest at load)."""
        return "sha256:" + self.library_sha256[:16]

    def get_handler(self, name: str):
        """The ctypes function pointer of function ``name``'s FFI handler.

        It is the symbol the manifest names for the function (the one that is
        registered), typed ``void* (void*)`` as in brainevent, so
        ``jax.ffi.pycapsule(mod.get_handler(name))`` works. ``KeyError`` lists
        the available names when ``name`` is not a function of this module.
        """
        fn = self._handlers.get(name)
        if fn is not None:
            return fn
        kernel = self.functions.get(name)
        if kernel is None:
            raise KeyError(f"function {name!r} not found in bekc module {self.name!r}; "
                           f"available: {list(self.functions)}")
        symbol = kernel.info["symbol"]
        try:
            fn = self.library[symbol]  # a new pointer object: the CDLL's cache stays untyped
        except AttributeError:
            raise LibraryLoadError(
                f"bekc library {self.library_path} has no symbol {symbol!r} (function "
                f"{name!r}); the manifest and library do not belong together") from None
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_void_p]
        self._handlers[name] = fn
        return fn

    # -- registration ---------------------------------------------------------
    def register(self, *, replace: bool = False) -> "Module":
        """Register every target with JAX (no-op for those already registered).

        ``replace=True`` is accepted for brainevent's sake; a target registered
        from a different library still raises :class:`~bekc.TargetConflictError`.
        """
        with _LOCK:
            if self.registered:
                return self
            key = self.manifest.get("key") or ""
            claims = {t["name"]: _Claim(self.library_sha256, key, t["symbol"], t["platform"],
                                        self.library_path, self)
                      for t in self.manifest["targets"]}
            _check_conflicts(claims, replace)
            todo = [t for t in self.manifest["targets"] if t["name"] not in _REGISTRY]
            if todo:
                import jax  # lazy: only registering and calling need JAX
                capsules = _capsules(self.library, self.library_path, todo)
                for t, cap in zip(todo, capsules):
                    try:
                        jax.ffi.register_ffi_target(t["name"], cap, platform=t["platform"])
                    except Exception as e:
                        raise RegistrationError(
                            f"jax.ffi.register_ffi_target({t['name']!r}, platform="
                            f"{t['platform']!r}) failed: {e}") from e
                    _REGISTRY[t["name"]] = claims[t["name"]]
            self.registered = True
            return self

    # -- access ---------------------------------------------------------------
    def __getitem__(self, name: str) -> KernelFunction:
        fn = self.functions.get(name)
        if fn is None and name in self.targets:
            fn = self.functions[self.targets[name]["function"]]
        if fn is None:
            raise KeyError(self._unknown(name))
        return fn

    # Only reached when normal lookup fails, so the attributes and methods above
    # always win over a function of the same name (reach that one as mod["name"]).
    def __getattr__(self, name: str) -> KernelFunction:
        if name.startswith("__") or "functions" not in self.__dict__:
            raise AttributeError(name)
        fn = self.functions.get(name)
        if fn is None:
            raise AttributeError(self._unknown(name))
        return fn

    def _unknown(self, name: str) -> str:
        close = _suggest(name, list(self.functions))
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return (f"bekc module {self.name!r} has no function {name!r}{hint} "
                f"(functions: {', '.join(sorted(self.functions)) or 'none'})")

    def __contains__(self, name: str) -> bool:
        return name in self.functions or name in self.targets

    def __iter__(self):
        return iter(self.functions.values())

    def __len__(self) -> int:
        return len(self.functions)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.functions))

    def __repr__(self) -> str:
        state = "" if self.registered else ", not registered"
        n = len(self.targets)
        return (f"<bekc.Module {self.name!r}: {n} target{'s' if n != 1 else ''} "
                f"[{', '.join(self.platforms) or '-'}], path={self.library_path!r}, "
                f"functions={self.function_names}{state}>")
