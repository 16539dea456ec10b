"""The brainevent releases bekc is tested against, found without importing them.

* 0.2.1: pinned in requirements-test.txt, installed in the test venv.
* 0.3.0: installed by scripts/setup.sh into ``.deps/brainevent-0.3.0`` (it
  needs Python 3.12 by its metadata, and is pure Python, so it installs on
  3.11 with ``--ignore-requires-python``).

``RELEASES`` maps each version to its package directory (the folder holding
``__init__.py`` and ``include/``), or to None where it is not installed, so
that a test parametrized over it skips with the reason rather than passing
vacuously.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Dict, Optional

REPO = Path(__file__).resolve().parents[1]


def _version_of(package: Path) -> Optional[str]:
    for name in ("_version.py", "__init__.py"):
        f = package / name
        if f.is_file():
            m = re.search(r"""__version__\s*=\s*['"]([^'"]+)['"]""", f.read_text(encoding="utf-8"))
            if m:
                return m.group(1)
    return None


def _installed() -> Optional[Path]:
    spec = importlib.util.find_spec("brainevent")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent.resolve()


def _release(version: str) -> Optional[Path]:
    for candidate in (REPO / ".deps" / f"brainevent-{version}" / "brainevent", _installed()):
        if candidate is not None and candidate.is_dir() and _version_of(candidate) == version:
            return candidate.resolve()
    return None


RELEASES: Dict[str, Optional[Path]] = {v: _release(v) for v in ("0.2.1", "0.3.0")}


def site_of(version: str) -> Optional[Path]:
    """The directory to put on sys.path / PYTHONPATH to import that release."""
    package = RELEASES.get(version)
    return package.parent if package is not None else None
