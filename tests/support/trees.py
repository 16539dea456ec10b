"""What the tests compare to tell that nothing under a directory was written."""

from __future__ import annotations

import os
from pathlib import Path


def listing(root: Path) -> dict:
    """Every path under `root` (links not followed) with what any write would
    change: mtime, ctime, size, mode, link count."""
    out = {}
    for p in [root, *root.rglob("*")]:
        st = os.lstat(p)
        out[str(p.relative_to(root))] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode,
                                         st.st_nlink)
    return out
