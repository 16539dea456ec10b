"""One bekc-built library against several jaxlib releases (tests/compat/run_compat.sh).

Slow and needs the network on a cold cache (one virtual environment per
release under $BEKC_COMPAT_DIR, default build/compat), so it runs only when
BEKC_COMPAT=1. BEKC_COMPAT_VERSIONS (space-separated) overrides the releases.
"""

from __future__ import annotations

import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(REPO, "tests", "compat", "run_compat.sh")


@pytest.mark.skipif(os.environ.get("BEKC_COMPAT") != "1",
                    reason="set BEKC_COMPAT=1 to build venvs for several jaxlib releases "
                           "(tests/compat/run_compat.sh; slow, needs PyPI on a cold cache)")
def test_one_library_across_jaxlib_releases():
    versions = os.environ.get("BEKC_COMPAT_VERSIONS", "").split()
    proc = subprocess.run(["bash", SCRIPT, *versions], capture_output=True, text=True,
                          timeout=3600)
    table = proc.stdout
    assert proc.returncode == 0, f"{table}\n{proc.stderr[-6000:]}"
    rows = [line for line in table.splitlines() if line[:1].isdigit()]
    assert len(rows) >= 4, table
    assert all(" PASS " in f" {line} " for line in rows), table
