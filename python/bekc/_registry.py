"""The process-wide registry of what bekc loaded: one object, one lock.

XLA cannot unregister a target, so everything here lives as long as the
process: which library registered each target name, the dlopen()ed
libraries, the :class:`~bekc.Module` of each library, and two memos that make
loading an unchanged build again cheap. Every read and write holds
:attr:`Registry.lock`; ``bekc.load`` holds it for a whole load, so two
threads loading the same build get the same module and never dlopen or
register twice.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Dict, Optional

from ._errors import RegistrationError, TargetConflictError
from ._library import LoadedLibrary, capsules, dlopen


class Claim:
    """A library's claim on one target name."""

    __slots__ = ("sha256", "key", "symbol", "platform", "library_path")

    def __init__(self, sha256: str, key: str, symbol: str, platform: str,
                 library_path: str) -> None:
        self.sha256 = sha256
        self.key = key
        self.symbol = symbol
        self.platform = platform
        self.library_path = library_path

    def same_handler(self, other: "Claim") -> bool:
        """True when both claims install the same handler for a target name.

        Same symbol and platform, from the same library bytes or from a library
        built from the same cache key (a rebuild after ``bekc cache clear`` may
        not be byte-identical but is the same program).
        """
        if self.symbol != other.symbol or self.platform != other.platform:
            return False
        return self.sha256 == other.sha256 or (bool(self.key) and self.key == other.key)


def claims_of(manifest: dict, sha: str, library_path: str) -> Dict[str, Claim]:
    """The claims a checked manifest makes, by target name."""
    key = manifest.get("key") or ""
    return {t["name"]: Claim(sha, key, t["symbol"], t["platform"], library_path)
            for t in manifest["targets"]}


class Registry:
    """Everything this process loaded, behind :attr:`lock` (reentrant)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        # target name -> the Claim of the library that registered it
        self._claims: Dict[str, Claim] = {}
        # library sha256 -> the dlopen()ed library
        self._libraries: Dict[str, LoadedLibrary] = {}
        # absolute library path -> sha256 of what was dlopen()ed from it
        self._sha_by_path: Dict[str, str] = {}
        # (sha256 or "key:<cache key>", target signature) -> Module
        self._modules: Dict[tuple, object] = {}
        # abs manifest path -> (manifest stat sig, library path, library stat sig, Module)
        self._load_memo: Dict[str, tuple] = {}
        # (abs path, dev, ino, size, mtime_ns) -> sha256
        self._sha_memo: Dict[tuple, str] = {}

    # -- target names ---------------------------------------------------------
    def targets(self) -> Dict[str, str]:
        """Registered target names -> the library path that registered each."""
        with self.lock:
            return {name: c.library_path for name, c in self._claims.items()}

    def check_conflicts(self, claims: Dict[str, Claim], replace: bool = False) -> None:
        """:class:`~bekc.TargetConflictError` when another handler holds one of the names."""
        with self.lock:
            conflicts = [(name, self._claims[name], claim) for name, claim in claims.items()
                         if name in self._claims and not self._claims[name].same_handler(claim)]
        if conflicts:
            raise _conflict_error(conflicts, replace)

    def register(self, module, replace: bool = False) -> None:
        """Register every target of ``module`` with JAX that is not registered yet."""
        with self.lock:
            if module.registered:
                return
            claims = claims_of(module.manifest, module.library_sha256, module.library_path)
            self.check_conflicts(claims, replace)
            todo = [t for t in module.manifest["targets"] if t["name"] not in self._claims]
            if todo:
                import jax  # lazy: only registering and calling need JAX
                caps = capsules(module.library, module.library_path, todo)
                for t, cap in zip(todo, caps):
                    try:
                        jax.ffi.register_ffi_target(t["name"], cap, platform=t["platform"])
                    except Exception as e:
                        raise RegistrationError(
                            f"jax.ffi.register_ffi_target({t['name']!r}, platform="
                            f"{t['platform']!r}) failed: {e}") from e
                    self._claims[t["name"]] = claims[t["name"]]
            module.registered = True

    # -- libraries ------------------------------------------------------------
    def library(self, lib_path: str, sha: str, st: os.stat_result) -> LoadedLibrary:
        """The library with content hash ``sha``, dlopen()ed from ``lib_path``
        (whose fstat is ``st``) the first time it is asked for."""
        with self.lock:
            loaded = self._libraries.get(sha)
            if loaded is None:
                stale = self._sha_by_path.get(lib_path, sha) != sha
                loaded = dlopen(lib_path, sha, st, stale)
                self._libraries[sha] = loaded
                self._sha_by_path.setdefault(lib_path, sha)
            return loaded

    def sha256(self, path: str, sig: tuple, compute: Callable[[], str]) -> str:
        """The SHA-256 of the file at ``path`` with stat signature ``sig``,
        ``compute()``d only the first time."""
        with self.lock:
            memo_key = (path,) + sig
            sha = self._sha_memo.get(memo_key)
            if sha is None:
                sha = compute()
                self._sha_memo[memo_key] = sha
            return sha

    # -- modules --------------------------------------------------------------
    def module(self, sha: str, key: str, signature: tuple):
        """The module already made for these targets from the same library
        bytes, or from a library of the same cache key; None if there is none."""
        with self.lock:
            found = self._modules.get((sha, signature))
            if found is None and key:
                found = self._modules.get(("key:" + key, signature))
            return found

    def add_module(self, sha: str, key: str, signature: tuple, module) -> None:
        with self.lock:
            self._modules[(sha, signature)] = module
            if key:
                self._modules.setdefault(("key:" + key, signature), module)

    def memo(self, path: str) -> Optional[tuple]:
        """What the last load of manifest ``path`` saw: (manifest stat sig,
        library path, library stat sig, Module), or None."""
        with self.lock:
            return self._load_memo.get(path)

    def remember(self, path: str, entry: Optional[tuple]) -> None:
        """Records (or, with None, forgets) the last load of manifest ``path``."""
        with self.lock:
            if entry is None:
                self._load_memo.pop(path, None)
            else:
                self._load_memo[path] = entry


def _conflict_error(conflicts, replace: bool) -> TargetConflictError:
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
    return TargetConflictError(
        f"{lead}FFI target {name!r}{more} is already registered from library "
        f"{old.library_path} (sha256 {old.sha256[:16]}...), and library {new.library_path} "
        f"(sha256 {new.sha256[:16]}...) claims the same name.{detail} {why} Rebuild one of "
        f"them under another prefix (`bekc build --target-prefix OTHER ...`, or "
        f"target_prefix='OTHER' / another name in load_cuda_inline), or restart the process "
        f"to pick up the new library.")


# The one registry of this process.
REGISTRY = Registry()
