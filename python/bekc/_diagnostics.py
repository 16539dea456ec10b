"""brainevent's ``list_registered_targets`` and ``print_diagnostics``, over bekc's state.

``import bekc as brainevent`` users reach for both: the first lists the FFI
targets this process registered (bekc's registry, so the targets of every
``bekc.load`` and compatibility loader), the second prints what builds would
use. The toolchain, GPUs and cache come from ``bekc doctor``, the one place
that finds them, so that what it prints is what ``bekc build`` uses.
"""

from __future__ import annotations

import os
import sys
from typing import List

from . import _compat
from ._binary import find_binary
from ._loader import registered_targets
from ._run import run_bekc
from ._version import __version__

__all__ = ["list_registered_targets", "print_diagnostics"]


def list_registered_targets() -> List[str]:
    """The FFI target names bekc registered in this process, sorted."""
    return sorted(registered_targets())


def print_diagnostics() -> None:
    """Prints the bekc package and binary, then ``bekc doctor``'s report
    (toolchain, GPUs, cache, Python/JAX; the cache of :func:`bekc.set_cache_dir`
    when one is set), then how many FFI targets this process registered."""
    binary = find_binary()
    print(f"bekc (Python package) {__version__}: {os.path.dirname(os.path.abspath(__file__))}")
    print(f"Python: {sys.version.split()[0]} ({sys.executable})")
    print(f"bekc binary: {binary}")
    doctor = run_bekc([binary, "doctor"] + _compat._cache_dir_args(), parse_json=False)
    print(doctor.rstrip("\n"))
    print(f"Registered FFI targets: {len(registered_targets())}")
