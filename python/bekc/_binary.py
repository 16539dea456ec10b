"""Finding the ``bekc`` executable, and the libraries built with it.

Lookup order: ``$BEKC`` (a path, or a command name looked up on ``PATH``),
then the ``bekc`` that pip installed from the same wheel as this package, then
``bekc`` on ``PATH``, then ``bin/bekc`` inside this package. Running it is
``_run.py``'s.
"""

from __future__ import annotations

import functools
import os
import shutil
from typing import List, Optional

from ._errors import BinaryNotFoundError

__all__ = ["find_binary", "bundled_binary_path", "wheel_binary_path", "libraries_beside"]


def libraries_beside(real_binary: str, name: str) -> List[str]:
    """Where a library built with the bekc binary at ``real_binary`` (its real
    path) lies: beside it (a build tree), then in the Python package of the
    install prefix it belongs to."""
    bindir = os.path.dirname(real_binary)
    return [os.path.join(bindir, name),
            os.path.join(os.path.dirname(bindir), "lib", "bekc", "python", "bekc", "lib", name)]


def bundled_binary_path() -> str:
    """Where a copy of ``bekc`` shipped inside the package would live."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "bekc")


@functools.lru_cache(maxsize=1)
def wheel_binary_path() -> Optional[str]:
    """The ``bekc`` that pip installed together with this package from bekc's
    wheel (into the environment's ``bin/``), or None.

    The wheel's file list (RECORD, in the ``bekc-*.dist-info`` that pip puts
    beside the package directory whatever the scheme: a venv, ``--user``,
    ``--prefix``) says where pip put it. It comes before ``PATH`` because it is
    the binary this loader was released with; a venv that is not activated has
    it off ``PATH``. The list is trusted only when it also holds this very
    file, so another installation of bekc is not mistaken for this one. Read
    directly, not through ``importlib.metadata``, whose search of ``sys.path``
    would cost every process that imports bekc milliseconds.
    """
    here = os.path.realpath(__file__)
    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        infos = sorted(n for n in os.listdir(site)
                       if n.startswith("bekc-") and n.endswith(".dist-info"))
    except OSError:
        return None
    for info in infos:
        paths = _record_paths(os.path.join(site, info, "RECORD"), site)
        if not any(os.path.basename(p) == "_binary.py" and os.path.realpath(p) == here
                   for p in paths):
            continue
        for p in paths:
            if os.path.basename(p) == "bekc" and os.path.basename(os.path.dirname(p)) == "bin":
                real = os.path.realpath(p)
                if _is_exe(real):
                    return real
    return None


def _record_paths(record: str, site: str) -> List[str]:
    """The files a wheel's RECORD lists, as paths under ``site``; [] when it
    cannot be read."""
    import csv
    try:
        with open(record, newline="", encoding="utf-8") as f:
            return [os.path.join(site, *row[0].split("/")) for row in csv.reader(f) if row]
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _is_exe(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_binary() -> str:
    """Absolute path of the ``bekc`` executable, or :class:`BinaryNotFoundError`."""
    env = os.environ.get("BEKC", "")
    if env:
        cand = os.path.expanduser(env)
        if os.sep in cand or (os.altsep and os.altsep in cand):
            if _is_exe(cand):
                return os.path.abspath(cand)
        else:
            found = shutil.which(cand)
            if found:
                return os.path.abspath(found)
        raise BinaryNotFoundError(
            f"$BEKC is set to {env!r}, which is not an executable file. Point it at the "
            f"bekc binary (export BEKC=/path/to/bekc) or unset it to search PATH.")
    from_wheel = wheel_binary_path()
    if from_wheel:
        return from_wheel
    found = shutil.which("bekc")
    if found:
        return os.path.abspath(found)
    bundled = bundled_binary_path()
    if _is_exe(bundled):
        return bundled
    raise BinaryNotFoundError(
        "cannot find the bekc executable. Looked at: $BEKC (not set); 'bekc' on PATH "
        f"({os.environ.get('PATH', '')!r}); the package copy {bundled} (absent). "
        "Build it (cmake --build build) and set BEKC=/path/to/bekc, or put its "
        "directory on PATH.")
