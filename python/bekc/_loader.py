"""``bekc.load``: read a manifest, check the library, register its FFI targets.

Registration is process-global (XLA cannot unregister a target), so this module
keeps one registry of every target name it registered, guarded by a lock:

* loading the same library again (same SHA-256, or the same cache key, with the
  same target names and symbols) returns the existing :class:`Module` and
  registers nothing;
* a different library claiming an already registered name raises
  :class:`~bekc.TargetConflictError` before anything is registered.

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
import shutil
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

_LOCK = threading.RLock()
# target name -> _Claim of the library that registered it (this process).
_REGISTRY: Dict[str, "_Claim"] = {}
# library sha256 -> ctypes.CDLL (kept alive for the life of the process).
_LIBS_BY_SHA: Dict[str, ctypes.CDLL] = {}
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


def _sha256_file(path: str, st: Optional[os.stat_result] = None) -> str:
    st = st if st is not None else os.stat(path)
    memo_key = (path,) + _stat_sig(st)
    sha = _SHA_MEMO.get(memo_key)
    if sha is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 20)
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


def _read_manifest(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ManifestError(f"bekc manifest not found: {path}") from None
    except OSError as e:
        raise ManifestError(f"cannot read bekc manifest {path}: {e}") from None
    try:
        manifest = json.loads(data)
    except ValueError as e:
        raise ManifestError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(manifest, dict):
        raise ManifestError(f"{path}: a bekc manifest is a JSON object, got {type(manifest).__name__}")
    schema = manifest.get("schema")
    if schema != SCHEMA_VERSION:
        raise ManifestError(
            f"{path}: unsupported manifest schema {schema!r}; this loader (bekc "
            f"{_version()}) reads schema {SCHEMA_VERSION}. Rebuild with a matching "
            f"`bekc build`, or install the bekc Python package that ships with that binary.")
    _validate(manifest, path)
    return manifest


def _version() -> str:
    from . import __version__
    return __version__


def _attrs_from_spec(arg_spec) -> List[dict]:
    attrs = []
    for tok in arg_spec:
        if isinstance(tok, str) and tok.startswith("attr."):
            name, _, typ = tok[5:].partition(":")
            attrs.append({"name": name, "type": typ})
    return attrs


def _validate(manifest: dict, path: str) -> None:
    for field in ("name", "library", "library_sha256", "targets"):
        if field not in manifest:
            raise ManifestError(f"{path}: manifest has no '{field}' field")
    if not isinstance(manifest["library"], str) or not manifest["library"]:
        raise ManifestError(f"{path}: 'library' must be a non-empty string")
    sha = manifest["library_sha256"]
    if not (isinstance(sha, str) and len(sha) == 64):
        raise ManifestError(f"{path}: 'library_sha256' must be 64 hex digits, got {sha!r}")
    targets = manifest["targets"]
    if not isinstance(targets, list):
        raise ManifestError(f"{path}: 'targets' must be a list")
    seen_names, seen_functions = set(), set()
    for i, t in enumerate(targets):
        if not isinstance(t, dict):
            raise ManifestError(f"{path}: targets[{i}] is not an object")
        for field in ("name", "symbol", "function", "platform", "num_args", "num_rets"):
            if field not in t:
                raise ManifestError(f"{path}: targets[{i}] has no '{field}' field")
        if "attrs" not in t:
            t["attrs"] = _attrs_from_spec(t.get("arg_spec", ()))
        for a in t["attrs"]:
            if not (isinstance(a, dict) and "name" in a and "type" in a):
                raise ManifestError(f"{path}: target {t['name']!r} has a malformed attr entry {a!r}")
            if a["type"] not in ATTR_TYPES:
                raise ManifestError(
                    f"{path}: target {t['name']!r} attribute {a['name']!r} has unknown type "
                    f"{a['type']!r} (known: {', '.join(sorted(ATTR_TYPES))})")
        if t["name"] in seen_names:
            raise ManifestError(f"{path}: target name {t['name']!r} appears twice")
        if t["function"] in seen_functions:
            raise ManifestError(f"{path}: function {t['function']!r} appears twice")
        seen_names.add(t["name"])
        seen_functions.add(t["function"])


def _target_signature(manifest: dict) -> tuple:
    return tuple(sorted((t["name"], t["symbol"], t["platform"]) for t in manifest["targets"]))


def _dlopen(lib_path: str, sha: str, manifest: dict) -> ctypes.CDLL:
    """dlopen the library once per content hash and keep the handle alive."""
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
    try:
        lib = ctypes.CDLL(open_path, mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2))
    except OSError as e:
        hint = ""
        if any(t.get("platform") == "CUDA" for t in manifest["targets"]):
            hint = (" This library contains CUDA targets: it needs the CUDA runtime "
                    "libraries it was linked against (check LD_LIBRARY_PATH or the "
                    "nvidia-* wheels) even to be loaded.")
        raise LibraryLoadError(f"cannot load bekc library {lib_path}: {e}.{hint}") from None
    _LIBS_BY_SHA[sha] = lib
    _SHA_BY_LOADED_PATH.setdefault(lib_path, sha)
    return lib


_SYMBOL_API = None


def _symbol_api():
    """(dlsym, PyCapsule_New) as private ctypes prototypes, or None off POSIX."""
    global _SYMBOL_API
    if _SYMBOL_API is None:
        try:
            dlsym = ctypes.CDLL(None).dlsym
            dlsym.restype = ctypes.c_void_p
            dlsym.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
            capsule_new = ctypes.PYFUNCTYPE(
                ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
                    ("PyCapsule_New", ctypes.pythonapi))
            _SYMBOL_API = (dlsym, capsule_new)
        except (AttributeError, OSError, TypeError):
            _SYMBOL_API = False
    return _SYMBOL_API or None


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


def load(manifest_or_dir, *, register: bool = True) -> "Module":
    """Load a bekc build and register its FFI targets with JAX.

    ``manifest_or_dir`` is a ``manifest.json`` path or a directory holding one.
    Checks the manifest schema and the library's SHA-256, loads the library
    with ``ctypes`` and registers every target under its manifest name
    (``<prefix>.<function>``). Loading the same library again is a no-op that
    returns the same :class:`Module`; another library claiming a registered
    name raises :class:`~bekc.TargetConflictError`. With ``register=False``
    nothing is registered (call :meth:`Module.register` later).
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
                        module.register()
                    return module
            except OSError:
                pass
            del _LOAD_MEMO[path]

        try:
            mst = os.stat(path)
        except OSError:
            mst = None
        manifest = _read_manifest(path)
        lib_path = os.path.normpath(os.path.join(os.path.dirname(path), manifest["library"]))
        try:
            lst = os.stat(lib_path)
        except OSError as e:
            raise ManifestError(
                f"{path}: library {lib_path} named by the manifest cannot be read: {e}") from None
        actual = _sha256_file(lib_path, lst)
        expected = manifest["library_sha256"].lower()
        if actual != expected:
            raise LibraryHashMismatchError(
                f"library {lib_path} does not match its manifest {path}: manifest records "
                f"sha256 {expected}, the file has sha256 {actual}. The build output was "
                f"modified or is corrupt; rebuild it (`bekc build --force ...`, or "
                f"`bekc cache verify` for cache entries).",
                library=lib_path, expected=expected, actual=actual)

        module = _module_for(manifest, path, lib_path, actual, register)
        if mst is not None:
            _LOAD_MEMO[path] = (_stat_sig(mst), lib_path, _stat_sig(lst), module)
        return module


def _module_for(manifest: dict, path: str, lib_path: str, sha: str, register: bool) -> "Module":
    key = manifest.get("key") or ""
    sig = _target_signature(manifest)
    claims = {t["name"]: _Claim(sha, key, t["symbol"], t["platform"], lib_path, None)
              for t in manifest["targets"]}
    if register:
        _check_conflicts(claims)
    # Reuse a module that already holds the same targets from an equivalent library.
    existing = _MODULES.get((sha, sig))
    if existing is None and key:
        existing = _MODULES.get(("key:" + key, sig))
    if existing is not None:
        if register and not existing.registered:
            existing.register()
        return existing
    lib = _dlopen(lib_path, sha, manifest)
    module = Module(manifest, path, lib_path, sha, lib)
    _MODULES[(sha, sig)] = module
    if key:
        _MODULES.setdefault(("key:" + key, sig), module)
    if register:
        module.register()
    return module


def _check_conflicts(claims: Dict[str, _Claim]) -> None:
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
    raise TargetConflictError(
        f"FFI target {name!r}{more} is already registered from library {old.library_path} "
        f"(sha256 {old.sha256[:16]}...), and library {new.library_path} "
        f"(sha256 {new.sha256[:16]}...) claims the same name.{detail} XLA cannot replace a "
        f"registered target. Rebuild one of them under another prefix "
        f"(`bekc build --target-prefix OTHER ...`, or target_prefix='OTHER' / another name in "
        f"load_cuda_inline), or restart the process to pick up the new library.")


def _suggest(name: str, candidates) -> List[str]:
    """The closest candidate (difflib), else one that contains or is contained in ``name``."""
    close = difflib.get_close_matches(name, candidates, n=1)
    if close:
        return close
    low = name.lower()
    return [c for c in candidates if low and (low in c.lower() or c.lower() in low)][:1]


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
        import jax
        return jax.ffi.ffi_call(self.target, out_spec, vmap_method=vmap_method,
                                **ffi_call_kwargs)(*arrays, **cast)

    def __call__(self, *arrays, **kwargs):
        out = kwargs.pop("out", None) if "out" not in self.attr_types else None
        vmap_method = (kwargs.pop("vmap_method", None)
                       if "vmap_method" not in self.attr_types else None)
        return self.call(arrays, kwargs, out=out, vmap_method=vmap_method)


class Module:
    """A loaded bekc build: one library and its FFI targets.

    ``mod.<function>(*arrays, out=None, vmap_method=None, **attrs)`` calls a
    target (see :class:`KernelFunction`); ``mod["function"]`` or
    ``mod["prefix.function"]`` works for any name. ``mod.targets`` maps target
    names to their manifest entries, ``mod.manifest`` is the parsed manifest.
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

    # -- registration ---------------------------------------------------------
    def register(self) -> "Module":
        """Register every target with JAX (no-op for those already registered)."""
        with _LOCK:
            if self.registered:
                return self
            key = self.manifest.get("key") or ""
            claims = {t["name"]: _Claim(self.library_sha256, key, t["symbol"], t["platform"],
                                        self.library_path, self)
                      for t in self.manifest["targets"]}
            _check_conflicts(claims)
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
        return (f"<bekc.Module {self.name!r}: {len(self.targets)} target"
                f"{'s' if len(self.targets) != 1 else ''} [{', '.join(self.platforms) or '-'}]"
                f" from {self.library_path}{state}>")
