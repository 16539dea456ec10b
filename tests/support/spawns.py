"""The start of a child Python script that counts the processes it starts:
a load answered in-process (libbekc_lookup.so) starts none."""

from __future__ import annotations

import textwrap

# Wraps subprocess.Popen; each process started is appended to `spawned`.
COUNTING = textwrap.dedent("""
    import json, subprocess, sys, warnings
    spawned = []
    real = subprocess.Popen
    class Counting(real):
        def __init__(self, args, *a, **k):
            spawned.append(list(args))
            super().__init__(args, *a, **k)
    subprocess.Popen = Counting
""")
