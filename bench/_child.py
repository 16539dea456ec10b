"""What bench_warm_load.py and bench_brainevent_start.py share: the bekc binary
they hand the package, the environment of their child processes, running one
child and reading its JSON line, and the figures' formats."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bench_deps_dir() -> Path:
    """Where optional peers are installed for this Python (``pip install --target``)."""
    return REPO / ".bench-deps" / f"py{sys.version_info[0]}{sys.version_info[1]}"


def locate_bekc(explicit: str | None) -> str | None:
    """--bekc, else build/bekc, else None: the package finds its own ($BEKC,
    the wheel's, PATH, bekc/bin)."""
    if explicit:
        return str(Path(explicit).resolve())
    built = REPO / "build" / "bekc"
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    return None


def child_env(nvcc_home: str, bekc: str | None, extra_path=(), **variables) -> dict:
    """This environment with the repository's python/ (and .bench-deps/pyXY,
    where it exists) on PYTHONPATH, nvcc_home's bin on PATH, no inherited
    cache directory of any tool, and ``variables`` set."""
    path = [str(REPO / "python")]
    if bench_deps_dir().is_dir():
        path.append(str(bench_deps_dir()))
    path += list(extra_path)
    if os.environ.get("PYTHONPATH"):
        path.append(os.environ["PYTHONPATH"])
    bin_path = [str(Path(nvcc_home) / "bin")]
    if (bench_deps_dir() / "bin").is_dir():  # e.g. ninja, from its wheel
        bin_path.append(str(bench_deps_dir() / "bin"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), CUDA_HOME=nvcc_home,
               PATH=os.pathsep.join(bin_path + [os.environ["PATH"]]))
    for var in ("BEKC_CACHE_DIR", "BRAINEVENT_CACHE_DIR", "TVM_FFI_CACHE_DIR"):
        env.pop(var, None)
    if bekc:
        env["BEKC"] = bekc
    env.update(variables)
    return env


def run_child(code: str, argv, env: dict, label: str) -> dict:
    """Run ``python -c code argv...``; its last stdout line as JSON, plus
    ``wall``: the whole process's wall-clock seconds. RuntimeError on failure."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *map(str, argv)], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{label}: child process failed ({proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def median(xs) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def fmt(seconds: float) -> str:
    if seconds != seconds:
        return "n/a"
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def ratio(x: float) -> str:
    return "n/a" if x != x else f"{x:.2f}x"


def machine_line(load_before, load_after) -> str:
    return (f"machine: {platform.node()}, {os.cpu_count()} CPUs, load average "
            f"{load_before[0]:.2f} before / {load_after[0]:.2f} after; Python "
            f"{platform.python_version()}")
