"""What a built library's dynamic section says, read with binutils' readelf."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path


def dynamic(library: Path) -> tuple:
    """(NEEDED sonames, RUNPATH entries) of a shared library."""
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True,
                         check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", out)
    runpath = [p for m in re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", out)
               for p in m.split(":")]
    return needed, runpath
