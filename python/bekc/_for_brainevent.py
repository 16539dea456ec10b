"""Whether a load is one brainevent asked for: made by one of the loaders that
:func:`bekc.use_for_brainevent` put in brainevent's modules (``_brainevent.py``).
Only such a build compiles against brainevent's own headers and takes
brainevent's nvcc settings (:func:`nvcc_settings`); every other load is the
``bekc build`` of its arguments, with bekc's runtime headers
(docs/migrating.md, "Which headers").
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
from typing import Optional, Tuple

__all__ = ["building_for_brainevent", "for_brainevent", "set_patched", "nvcc_settings"]

_FOR_BRAINEVENT: contextvars.ContextVar = contextvars.ContextVar("bekc_for_brainevent",
                                                                default=False)

# Whether brainevent's loaders are bekc's now: set by _brainevent.py, which
# makes and undoes the patch.
_PATCHED = False


@contextlib.contextmanager
def building_for_brainevent():
    """Marks the loads made inside it as brainevent's own (use_for_brainevent)."""
    token = _FOR_BRAINEVENT.set(True)
    try:
        yield
    finally:
        _FOR_BRAINEVENT.reset(token)


def for_brainevent() -> bool:
    """Whether the load in progress is one brainevent asked for."""
    return _FOR_BRAINEVENT.get()


def set_patched(patched: bool) -> None:
    global _PATCHED
    _PATCHED = patched


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
