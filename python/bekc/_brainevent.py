"""``bekc.use_for_brainevent()``: send all of brainevent's kernel builds through bekc.

brainevent's own kernels are loaded by its modules at call time through names
they imported once (``from brainevent._op import load_cuda_file``). Replacing
the function in ``brainevent._op.kernix_pipeline`` alone would miss those
copies, so this module replaces every reference that an imported
``brainevent``/``brainevent.*`` module holds to one of brainevent's loaders, after
importing the submodules whose source names a loader. Modules imported later
read the replaced names from ``brainevent._op``.

Importing this module imports neither brainevent nor JAX; calling
:func:`use_for_brainevent` imports brainevent (and so JAX).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from . import _compat
from ._errors import BekcError

__all__ = [
    "use_for_brainevent", "BrainEventPatch", "SUPPORTED_BRAINEVENT_VERSIONS",
    "BrainEventNotInstalledError", "UnsupportedBrainEventVersionError",
]

# The brainevent releases whose loaders bekc's reproduce, parameter for parameter.
SUPPORTED_BRAINEVENT_VERSIONS = frozenset({"0.2.1"})

# brainevent's loaders, each replaced by bekc's function of the same name.
LOADER_NAMES = ("load_cuda_inline", "load_cuda_file", "load_cuda_dir",
                "load_cpp_inline", "load_cpp_file")

# Where brainevent defines the loaders.
_PIPELINE = "brainevent._op.kernix_pipeline"

_LOADER_WORD = re.compile(r"\b(?:" + "|".join(LOADER_NAMES) + r")\b")


class BrainEventNotInstalledError(BekcError, ImportError):
    """``use_for_brainevent`` was called, but brainevent cannot be imported."""


class UnsupportedBrainEventVersionError(BekcError, RuntimeError):
    """The installed brainevent is not a version whose loaders bekc reproduces."""


@dataclass(frozen=True)
class BrainEventPatch:
    """What :func:`use_for_brainevent` did.

    ``enabled``: whether brainevent's loaders are now bekc's. ``version``: the
    brainevent version ("" when none was looked at). ``replaced``: references
    this call pointed at bekc (0 when they already were). ``restored``:
    references this call gave back to brainevent (undo). ``references``: every
    ``(module, attribute)`` that now holds one of bekc's loaders.
    """

    enabled: bool
    version: str
    replaced: int
    restored: int
    references: Tuple[Tuple[str, str], ...]

    def undo(self) -> "BrainEventPatch":
        """Give brainevent its own loaders back (``use_for_brainevent(False)``)."""
        return use_for_brainevent(False)


_LOCK = threading.Lock()
# loader name -> brainevent's original function, while the patch is on.
_ORIGINALS: Dict[str, object] = {}
# (module name, attribute) -> (original, replacement), while the patch is on.
_PATCHED: Dict[Tuple[str, str], Tuple[object, object]] = {}
_VERSION = ""


def _bekc_loader(name: str):
    return getattr(_compat, name)


def _import_brainevent():
    try:
        spec = importlib.util.find_spec("brainevent")
    except (ImportError, ValueError):
        spec = None
    supported = ", ".join(sorted(SUPPORTED_BRAINEVENT_VERSIONS))
    if spec is None:
        raise BrainEventNotInstalledError(
            f"bekc.use_for_brainevent(): brainevent is not installed in this Python "
            f"({sys.executable}). It replaces brainevent's loaders with bekc's, so install a "
            f"supported brainevent first: pip install brainevent=={max(SUPPORTED_BRAINEVENT_VERSIONS)}"
            f" (supported: {supported}). Without brainevent, `import bekc as brainevent` gives "
            f"the same loaders directly.")
    try:
        return importlib.import_module("brainevent")
    except ImportError as e:
        raise BrainEventNotInstalledError(
            f"bekc.use_for_brainevent(): brainevent is installed at {spec.origin} but cannot "
            f"be imported: {e}. Repair it: pip install --force-reinstall "
            f"brainevent=={max(SUPPORTED_BRAINEVENT_VERSIONS)}") from e


def _check_version(brainevent) -> str:
    version = str(getattr(brainevent, "__version__", "") or "")
    if version not in SUPPORTED_BRAINEVENT_VERSIONS:
        supported = ", ".join(sorted(SUPPORTED_BRAINEVENT_VERSIONS))
        raise UnsupportedBrainEventVersionError(
            f"bekc.use_for_brainevent(): brainevent {version or '(no __version__)'} is installed "
            f"({getattr(brainevent, '__file__', '?')}), but bekc reproduces the loaders of "
            f"brainevent {supported} only; their parameters may differ in other releases. "
            f"Install a supported one (pip install brainevent=={max(SUPPORTED_BRAINEVENT_VERSIONS)})"
            f" or use bekc's loaders directly (import bekc as brainevent).")
    return version


def _modules_naming_loaders(brainevent) -> List[str]:
    """brainevent's non-test submodules whose source mentions a loader by name."""
    roots = list(getattr(brainevent, "__path__", ()) or ())
    names: List[str] = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d.isidentifier())
            for fname in sorted(filenames):
                if not fname.endswith(".py") or fname.endswith("_test.py"):
                    continue
                stem = fname[:-3]
                if not stem.isidentifier() or stem == "__main__":
                    continue
                try:
                    with open(os.path.join(dirpath, fname), encoding="utf-8") as f:
                        text = f.read()
                except (OSError, UnicodeDecodeError):
                    continue
                if not _LOADER_WORD.search(text):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, stem), root).split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                names.append(".".join(["brainevent"] + rel))
    return names


def _import_holders(brainevent) -> None:
    # A module that cannot be imported holds no reference; the rest still must be patched.
    for name in _modules_naming_loaders(brainevent):
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - optional dependencies of brainevent's backends
                pass


def _brainevent_modules():
    for name, module in list(sys.modules.items()):
        if module is not None and (name == "brainevent" or name.startswith("brainevent.")):
            yield name, module


def _enable() -> BrainEventPatch:
    global _VERSION
    brainevent = _import_brainevent()
    version = _check_version(brainevent)
    _import_holders(brainevent)
    if not _ORIGINALS:
        pipeline = importlib.import_module(_PIPELINE)
        for name in LOADER_NAMES:
            _ORIGINALS[name] = getattr(pipeline, name)
        _VERSION = version
    by_id = {id(fn): name for name, fn in _ORIGINALS.items()}
    replaced = 0
    for mod_name, module in _brainevent_modules():
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            loader = by_id.get(id(value))
            if loader is None or value is not _ORIGINALS[loader]:
                continue
            replacement = _bekc_loader(loader)
            setattr(module, attr, replacement)
            _PATCHED[(mod_name, attr)] = (value, replacement)
            replaced += 1
    return BrainEventPatch(True, version, replaced, 0, tuple(sorted(_PATCHED)))


def _disable() -> BrainEventPatch:
    global _VERSION
    restored = 0
    for (mod_name, attr), (original, replacement) in sorted(_PATCHED.items()):
        module = sys.modules.get(mod_name)
        # Leave alone a name that someone rebound after the patch.
        if module is not None and getattr(module, attr, None) is replacement:
            setattr(module, attr, original)
            restored += 1
    version = _VERSION
    _PATCHED.clear()
    _ORIGINALS.clear()
    _VERSION = ""
    return BrainEventPatch(False, version, 0, restored, ())


def nvcc_settings() -> Tuple[Optional[str], Optional[str]]:
    """brainevent's nvcc choices while its loaders are bekc's, else ``(None, None)``:
    ``BRAINEVENT_NVCC_PATH`` (or None when unset) and the discovery preference,
    ``"pip"`` or ``"system"``, that ``brainevent.config.prefer_system_nvcc``,
    ``set_nvcc_discovery`` or ``BRAINEVENT_NVCC_PREFER`` chose, read from
    brainevent itself (its ``get_nvcc_discovery``)."""
    if not _PATCHED:
        return None, None
    path = os.environ.get("BRAINEVENT_NVCC_PATH") or None
    prefer = None
    try:
        toolchain = importlib.import_module("brainevent._op.kernix_toolchain")
    except ImportError:
        toolchain = None
    getter = getattr(toolchain, "get_nvcc_discovery", None)
    if getter is not None:
        value = getter()
        prefer = value if value in ("pip", "system") else None
    return path, prefer


def use_for_brainevent(enable: bool = True) -> BrainEventPatch:
    """Make brainevent build every kernel with bekc (``enable=False``: undo).

    Replaces ``load_cuda_inline``, ``load_cuda_file``, ``load_cuda_dir``,
    ``load_cpp_inline`` and ``load_cpp_file`` with bekc's functions of the same
    name wherever an imported ``brainevent`` or ``brainevent.*`` module holds
    brainevent's original (``brainevent``, ``brainevent._op``,
    ``brainevent._op.kernix_pipeline``, and the operator modules that imported
    a loader), importing first every brainevent submodule whose source names
    one. Later ``from brainevent._op import load_cuda_file`` gets bekc's.

    Call it once, early: after ``import bekc`` and before brainevent's kernels
    are first used (a kernel already built by brainevent keeps its registered
    targets). It imports brainevent, which imports JAX. It raises
    :class:`BrainEventNotInstalledError` (an ``ImportError``) when brainevent
    cannot be imported, and :class:`UnsupportedBrainEventVersionError` when its
    ``__version__`` is not in :data:`SUPPORTED_BRAINEVENT_VERSIONS`; nothing
    is changed then. Calling it again is harmless (it also catches modules
    imported since). Modules outside brainevent that copied a loader before
    the call (``from brainevent import load_cuda_inline``) keep brainevent's.

    Returns a :class:`BrainEventPatch` report; ``use_for_brainevent(False)``
    or ``report.undo()`` puts brainevent's own loaders back.
    """
    with _LOCK:
        return _enable() if enable else _disable()
