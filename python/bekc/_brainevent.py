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

import functools
import importlib
import importlib.util
import os
import re
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Dict, List, Tuple

from . import _compat
from ._caller import caller_stacklevel
from ._errors import BekcError
from ._for_brainevent import building_for_brainevent, set_patched
from ._signatures import differences

__all__ = [
    "use_for_brainevent", "BrainEventPatch", "TESTED_BRAINEVENT_VERSIONS",
    "BrainEventNotInstalledError", "UnsupportedBrainEventVersionError",
    "UntestedBrainEventWarning",
]

# The brainevent releases bekc's tests run against (tests/brainevent_releases.py).
# The package's SUPPORTED_BRAINEVENT_VERSIONS starts as this set; users widen it.
TESTED_BRAINEVENT_VERSIONS = frozenset({"0.2.1", "0.3.0"})

# brainevent's loaders, each replaced by bekc's function of the same name.
LOADER_NAMES = ("load_cuda_inline", "load_cuda_file", "load_cuda_dir",
                "load_cpp_inline", "load_cpp_file")

# What `import bekc as brainevent` users call with brainevent's parameters:
# the loaders and the cache functions. The cache functions stay brainevent's
# under the patch (brainevent keeps its own files in its cache directory), but
# their parameters are checked all the same.
CHECKED_NAMES = LOADER_NAMES + ("clear_cache", "set_cache_dir", "get_cache_dir")

# Where brainevent exports them (its operator modules import them from here).
_OP = "brainevent._op"

_LOADER_WORD = re.compile(r"\b(?:" + "|".join(LOADER_NAMES) + r")\b")


class BrainEventNotInstalledError(BekcError, ImportError):
    """``use_for_brainevent`` was called, but brainevent cannot be imported."""


class UnsupportedBrainEventVersionError(BekcError, RuntimeError):
    """The installed brainevent's loaders take parameters that bekc's do not
    take the same way, so bekc's cannot stand in for them."""


class UntestedBrainEventWarning(UserWarning):
    """brainevent is a release bekc was not tested with and that is not listed
    in ``bekc.SUPPORTED_BRAINEVENT_VERSIONS``; its loaders' parameters match."""


@dataclass(frozen=True)
class BrainEventPatch:
    """What :func:`use_for_brainevent` did.

    ``enabled``: whether brainevent's loaders are now bekc's. ``version``: the
    brainevent version ("" when none was looked at). ``check``: which check
    let it in: ``"tested"`` (a release in :data:`TESTED_BRAINEVENT_VERSIONS`),
    ``"listed"`` (one added to ``bekc.SUPPORTED_BRAINEVENT_VERSIONS``) or
    ``"parameters"`` (any other release: its loaders take the parameters bekc's
    take, and a warning said so); each of them compares the parameters too.
    ``""`` after an undo. ``replaced``: references
    this call pointed at bekc (0 when they already were). ``restored``:
    references this call gave back to brainevent (undo). ``references``: every
    ``(module, attribute)`` that now holds one of bekc's loaders.
    """

    enabled: bool
    version: str
    replaced: int
    restored: int
    references: Tuple[Tuple[str, str], ...]
    check: str = ""

    def undo(self) -> "BrainEventPatch":
        """Give brainevent its own loaders back (``use_for_brainevent(False)``)."""
        return use_for_brainevent(False)


_LOCK = threading.Lock()
# loader name -> brainevent's original function, while the patch is on.
_ORIGINALS: Dict[str, object] = {}
# (module name, attribute) -> (original, replacement), while the patch is on.
_PATCHED: Dict[Tuple[str, str], Tuple[object, object]] = {}
_VERSION = ""
_CHECK = ""


def _bekc_loader(name: str):
    return getattr(_compat, name)


# loader name -> what brainevent's modules hold in its place: bekc's loader,
# marking its builds as brainevent's (_for_brainevent.py), which compile
# against brainevent's own headers with brainevent's nvcc settings. One
# function per name, so that every module holds the same one and undo can
# recognise it.
_ROUTED: Dict[str, object] = {}


def _routed_loader(name: str):
    routed = _ROUTED.get(name)
    if routed is None:
        loader = _bekc_loader(name)

        @functools.wraps(loader)
        def routed(*args, **kwargs):
            with building_for_brainevent():
                return loader(*args, **kwargs)

        routed.__doc__ = (f"bekc's {name}, for brainevent's own kernels (use_for_brainevent): "
                          f"the build uses brainevent's headers.\n\n{loader.__doc__ or ''}")
        _ROUTED[name] = routed
    return routed


def _version_key(version: str) -> Tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def _tested_text() -> str:
    return ", ".join(sorted(TESTED_BRAINEVENT_VERSIONS, key=_version_key))


# What the errors tell a user to install.
_INSTALL = f"pip install brainevent=={max(TESTED_BRAINEVENT_VERSIONS, key=_version_key)}"


def _import_brainevent():
    try:
        spec = importlib.util.find_spec("brainevent")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise BrainEventNotInstalledError(
            f"bekc.use_for_brainevent(): brainevent is not installed in this Python "
            f"({sys.executable}). It replaces brainevent's loaders with bekc's, so install "
            f"brainevent first: {_INSTALL} (tested: {_tested_text()}). Without brainevent, "
            f"`import bekc as brainevent` gives the same loaders directly.")
    try:
        return importlib.import_module("brainevent")
    except ImportError as e:
        raise BrainEventNotInstalledError(
            f"bekc.use_for_brainevent(): brainevent is installed at {spec.origin} but cannot "
            f"be imported: {e}. Repair it: pip install --force-reinstall brainevent") from e


def _listed_versions() -> frozenset:
    """``bekc.SUPPORTED_BRAINEVENT_VERSIONS`` as the user left it: read from the
    package at each call, so that rebinding it there takes effect."""
    listed = getattr(importlib.import_module(__package__), "SUPPORTED_BRAINEVENT_VERSIONS",
                     TESTED_BRAINEVENT_VERSIONS)
    if isinstance(listed, (str, bytes)) or not all(isinstance(v, str) for v in listed):
        raise TypeError(
            f"bekc.SUPPORTED_BRAINEVENT_VERSIONS must be a set of version strings, got "
            f"{listed!r}; widen it with bekc.SUPPORTED_BRAINEVENT_VERSIONS |= {{'0.4.0'}}")
    return frozenset(listed)


def _brainevent_functions(label: str) -> Dict[str, object]:
    """brainevent's functions of CHECKED_NAMES (None where one is missing).
    ``label``: "brainevent VERSION (PATH)", for the error."""
    try:
        op = importlib.import_module(_OP)
    except Exception as e:  # noqa: BLE001 - any failure means the loaders cannot be checked
        raise UnsupportedBrainEventVersionError(
            f"bekc.use_for_brainevent(): {label} has no importable "
            f"{_OP} ({type(e).__name__}: {e}), where brainevent {_tested_text()} define "
            f"their loaders; nothing was changed. Install a tested release ({_INSTALL}) or "
            f"use bekc's loaders directly (import bekc as brainevent).") from e
    return {name: getattr(op, name, None) for name in CHECKED_NAMES}


def _check_release(version: str, label: str, functions: Dict[str, object]) -> str:
    """The check that brainevent ``version`` passed (BrainEventPatch.check);
    raises UnsupportedBrainEventVersionError when a function's parameters differ."""
    found: List[str] = []
    for name in CHECKED_NAMES:
        theirs = functions[name]
        if not callable(theirs):
            found.append(f"{_OP} has no function {name}()")
        else:
            found.extend(differences(name, theirs, _bekc_loader(name)))
    if found:
        raise UnsupportedBrainEventVersionError(
            f"bekc.use_for_brainevent(): {label} has loaders whose "
            f"parameters differ from bekc's: {'; '.join(found)}. bekc's loaders would not take "
            f"every call brainevent makes the same way, so nothing was changed. Install a tested "
            f"release ({_INSTALL}; tested: {_tested_text()}) or use bekc's loaders directly "
            f"(import bekc as brainevent).")
    if version in TESTED_BRAINEVENT_VERSIONS:
        return "tested"
    if version in _listed_versions():
        return "listed"
    warnings.warn(
        f"bekc.use_for_brainevent(): brainevent {version or '(no __version__)'} is not a release bekc was tested "
        f"with ({_tested_text()}), but its loaders take the same parameters as bekc's, so "
        f"bekc builds its kernels; add it to bekc.SUPPORTED_BRAINEVENT_VERSIONS to silence "
        f"this warning", UntestedBrainEventWarning, stacklevel=caller_stacklevel())
    return "parameters"


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
    global _VERSION, _CHECK
    brainevent = _import_brainevent()
    if not _ORIGINALS:
        version = str(getattr(brainevent, "__version__", "") or "")
        label = (f"brainevent {version or '(no __version__)'} "
                 f"({getattr(brainevent, '__file__', '?')})")
        functions = _brainevent_functions(label)
        _CHECK = _check_release(version, label, functions)
        _VERSION = version
        _ORIGINALS.update((name, functions[name]) for name in LOADER_NAMES)
    _import_holders(brainevent)
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
            replacement = _routed_loader(loader)
            setattr(module, attr, replacement)
            _PATCHED[(mod_name, attr)] = (value, replacement)
            replaced += 1
    set_patched(bool(_PATCHED))
    return BrainEventPatch(True, _VERSION, replaced, 0, tuple(sorted(_PATCHED)), _CHECK)


def _disable() -> BrainEventPatch:
    global _VERSION, _CHECK
    restored = 0
    for (mod_name, attr), (original, replacement) in sorted(_PATCHED.items()):
        module = sys.modules.get(mod_name)
        # Leave alone a name that someone rebound after the patch.
        if module is not None and getattr(module, attr, None) is replacement:
            setattr(module, attr, original)
            restored += 1
    version = _VERSION
    _PATCHED.clear()
    set_patched(False)
    _ORIGINALS.clear()
    _VERSION = ""
    _CHECK = ""
    return BrainEventPatch(False, version, 0, restored, ())


def use_for_brainevent(enable: bool = True) -> BrainEventPatch:
    """Make brainevent build every kernel with bekc (``enable=False``: undo).

    Replaces ``load_cuda_inline``, ``load_cuda_file``, ``load_cuda_dir``,
    ``load_cpp_inline`` and ``load_cpp_file`` with bekc's functions of the same
    name wherever an imported ``brainevent`` or ``brainevent.*`` module holds
    brainevent's original (``brainevent``, ``brainevent._op``,
    ``brainevent._op.kernix_pipeline``, and the operator modules that imported
    a loader), importing first every brainevent submodule whose source names
    one. Later ``from brainevent._op import load_cuda_file`` gets bekc's.
    What brainevent's modules then hold is bekc's loader (its ``__wrapped__``)
    marked as brainevent's: the builds it makes, and only those, compile
    against brainevent's own headers (its ``include`` directory after the
    caller's ``extra_include_paths``, where bekc's runtime headers follow) and
    take brainevent's nvcc settings; ``verbose=True`` says so. bekc's own
    loaders (``bekc.load_cpp_file``, ...) keep compiling with the headers
    ``bekc build`` uses, patched or not (docs/migrating.md, "Which headers").

    Call it once, early: after ``import bekc`` and before brainevent's kernels
    are first used (a kernel already built by brainevent keeps its registered
    targets). It imports brainevent, which imports JAX. It raises
    :class:`BrainEventNotInstalledError` (an ``ImportError``) when brainevent
    cannot be imported, and :class:`UnsupportedBrainEventVersionError` when
    one of brainevent's loaders or cache functions (:data:`CHECKED_NAMES`)
    takes a parameter that bekc's function of the same name does not take the
    same way (the message names each function and parameter); nothing is
    changed then. Which release it is decides only whether it warns: a
    release in :data:`TESTED_BRAINEVENT_VERSIONS` or in
    ``bekc.SUPPORTED_BRAINEVENT_VERSIONS`` does not, any other one warns once
    (:class:`UntestedBrainEventWarning`). Calling it again is harmless (it
    also catches modules imported since). Modules outside brainevent that
    copied a loader before the call (``from brainevent import
    load_cuda_inline``) keep brainevent's.

    Returns a :class:`BrainEventPatch` report; ``use_for_brainevent(False)``
    or ``report.undo()`` puts brainevent's own loaders back.
    """
    with _LOCK:
        return _enable() if enable else _disable()
