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

import os
import stat
from typing import Dict, Tuple

from ._errors import LibraryHashMismatchError, ManifestError
from ._library import capsules as _capsules  # noqa: F401  (tests reach it here)
from ._library import check_symbols as _check_symbols
from ._manifest import MAX_MANIFEST_BYTES  # noqa: F401  (tests reach it here)
from ._manifest import (OPEN_FLAGS, bad_field, file_kind, resolve_manifest_path, sha256_fd,
                        stat_sig, target_signature)
from ._manifest import read_manifest as _read_manifest
from ._module import KernelFunction, Module, _varying_axes  # noqa: F401
from ._registry import REGISTRY, claims_of

__all__ = ["load", "Module", "KernelFunction", "registered_targets"]


def registered_targets() -> Dict[str, str]:
    """Target names registered by bekc in this process -> library path."""
    return REGISTRY.targets()


def load(manifest_or_dir, *, register: bool = True, replace: bool = False,
         vmap_method=None) -> "Module":
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
    ``vmap_method`` declares how ``jax.vmap`` batches the targets: a method
    for all, or ``{function: method}`` (:meth:`Module.set_vmap_method`).
    """
    module = _load(manifest_or_dir, register, replace)
    if vmap_method is not None:
        module.set_vmap_method(vmap_method)
    return module


def _load(manifest_or_dir, register: bool, replace: bool) -> "Module":
    path = resolve_manifest_path(manifest_or_dir)
    with REGISTRY.lock:
        # Fast path: same manifest and library files as last time.
        memo = REGISTRY.memo(path)
        if memo is not None:
            msig, lib_path, lsig, module = memo
            try:
                if stat_sig(os.stat(path)) == msig and stat_sig(os.stat(lib_path)) == lsig:
                    if register and not module.registered:
                        module.register(replace=replace)
                    return module
            except OSError:
                pass
            REGISTRY.remember(path, None)

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
        REGISTRY.remember(path, (stat_sig(mst), lib_path, stat_sig(lst), module))
        return module


def _hash_library(lib_path: str, path: str) -> Tuple[os.stat_result, str]:
    """(fstat, SHA-256) of the library, which must be a regular file."""
    try:
        fd = os.open(lib_path, OPEN_FLAGS)
    except OSError as e:
        raise ManifestError(
            f"{path}: library {lib_path} named by the manifest cannot be read: {e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise bad_field(path, "library", f"names {lib_path}, which is {file_kind(st)}, "
                                             f"not a regular file")
        return st, REGISTRY.sha256(lib_path, stat_sig(st), lambda: sha256_fd(fd, st.st_size))
    except OSError as e:
        raise ManifestError(
            f"{path}: library {lib_path} named by the manifest cannot be read: {e}") from None
    finally:
        os.close(fd)


def _module_for(manifest: dict, path: str, lib_path: str, sha: str, st: os.stat_result,
                register: bool, replace: bool = False) -> Module:
    """The Module for a checked manifest; ``st`` is the fstat of the hashed library."""
    key = manifest.get("key") or ""
    sig = target_signature(manifest)
    if register:
        REGISTRY.check_conflicts(claims_of(manifest, sha, lib_path), replace)
    # Reuse a module that already holds the same targets from an equivalent library.
    existing = REGISTRY.module(sha, key, sig)
    if existing is not None:
        if register and not existing.registered:
            existing.register(replace=replace)
        return existing
    loaded = REGISTRY.library(lib_path, sha, st)
    _check_symbols(loaded, lib_path, manifest, path)
    module = Module(manifest, path, lib_path, sha, loaded.handle)
    REGISTRY.add_module(sha, key, sig, module)
    if register:
        module.register(replace=replace)
    return module
