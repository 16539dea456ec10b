"""For the tests that run bekc as other users with setpriv(1): whether they
can, and a temporary tree they can reach."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest


def reachable_by_others(path: Path) -> bool:
    p = Path(path).resolve()
    if not os.stat(p).st_mode & stat.S_IXOTH:
        return False
    return all(os.stat(d).st_mode & stat.S_IXOTH for d in p.parents)


def require_setpriv(bekc_path: Path, who: str) -> None:
    """Skips the test unless setpriv(1) is there and `who` can run bekc."""
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv(1) is missing")
    if not reachable_by_others(bekc_path):
        pytest.skip(f"{bekc_path} cannot be run by {who}")


def shared_base(prefix: str) -> Path:
    """A fresh directory under the system's temporary directory, mode 755."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(base, 0o755)
    return base
