"""A tool run that must succeed, for the tests that drive pip, CMake, make and
ninja around bekc: the argument vector is spawned without a shell, and a
failure shows the command, its exit status and its output."""

from __future__ import annotations

import subprocess

TIMEOUT_S = 300


def run(argv, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", TIMEOUT_S)
    done = subprocess.run([str(a) for a in argv], **kw)
    assert done.returncode == 0, (
        f"$ {' '.join(map(str, argv))}\n-> exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done
