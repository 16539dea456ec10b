"""Where every test suite finds the programs it runs: bekc, libbekc_numba.so,
libbekc_lookup.so and nvcc.

The root conftest (tests/conftest.py) turns these into the session fixtures
``bekc_path``, ``numba_library``, ``lookup_library`` and ``nvcc``; code outside a fixture (a
module-scoped helper, tests/gpu's conftest) calls the functions here.

* bekc: ``$BEKC_BINARY``, else ``$BEKC`` (a path, or a name on ``PATH``, as the
  Python package reads it), else ``<repo>/build/bekc``. A variable that names
  no executable file fails the tests that need bekc; with neither variable set
  and no default build, they are skipped.
* libbekc_numba.so: ``$BEKC_NUMBA_LIBRARY``, else the file beside the bekc
  binary (its real path: a build tree), else ``<repo>/build``. A variable that
  names no file fails; no library at all skips.
* libbekc_lookup.so: the file beside the bekc binary (its real path), where
  the Python package looks for it; none skips.
* nvcc: the one bekc itself would use, asked of bekc (a dry run of a CUDA
  build with ``--explain-key``, which names the nvcc chosen and why), so the
  search order lives only in bekc (docs/cli.md, "Which nvcc"). No nvcc skips.

Every process is spawned with an argument vector, never through a shell.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BEKC = REPO / "build" / "bekc"
NUMBA_LIBRARY_NAME = "libbekc_numba.so"
LOOKUP_LIBRARY_NAME = "libbekc_lookup.so"

# The line `bekc build --explain-key` prints on standard error for a CUDA build.
_NVCC_CHOSEN = re.compile(r"^bekc: nvcc (.+) \(chosen by (.*)\)$", re.M)
# A CUDA source with one export: enough for bekc to plan an nvcc compile.
_NVCC_PROBE = ('#include "brainevent/common.h"\n'
               "// @BE probe\n"
               "void probe(const BE::Tensor x, BE::Tensor out, int64_t stream) {}\n")


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def bekc_candidate() -> Tuple[Optional[Path], Optional[str]]:
    """The bekc the tests would run and the variable that named it (None: the
    default build). The path is None when a variable names a program not on PATH."""
    for var in ("BEKC_BINARY", "BEKC"):
        value = os.environ.get(var)
        if not value:
            continue
        if os.sep not in value:
            found = shutil.which(value)
            return (Path(found) if found else None), var
        return Path(value).expanduser(), var
    return DEFAULT_BEKC, None


def bekc_binary() -> Path:
    """The bekc binary under test (absolute, links resolved); skips or fails
    the calling test as the module docstring says."""
    path, var = bekc_candidate()
    if path is not None and _is_executable(path):
        return path.resolve()
    if var is not None:
        pytest.fail(f"{var}={os.environ[var]} is not an executable file: point it at the "
                    "bekc binary, or unset it to use build/bekc")
    pytest.skip(f"bekc binary not built at {DEFAULT_BEKC} (cmake --build build --target bekc; "
                "or set BEKC_BINARY to point elsewhere)")


def numba_library(bekc: Path) -> Path:
    """libbekc_numba.so for the bekc binary `bekc`; skips or fails the calling test."""
    explicit = os.environ.get("BEKC_NUMBA_LIBRARY")
    if explicit:
        if not os.path.isfile(explicit):
            pytest.fail(f"BEKC_NUMBA_LIBRARY={explicit} is not a file")
        return Path(explicit).resolve()
    for directory in (Path(os.path.realpath(bekc)).parent, REPO / "build"):
        if (directory / NUMBA_LIBRARY_NAME).is_file():
            return (directory / NUMBA_LIBRARY_NAME).resolve()
    pytest.skip(f"{NUMBA_LIBRARY_NAME} not built (cmake --build build --target bekc_numba)")


def lookup_library(bekc: Path) -> Path:
    """libbekc_lookup.so of the bekc binary `bekc` (the file beside it, where
    the Python package finds it); skips the calling test when not built."""
    found = Path(os.path.realpath(bekc)).parent / LOOKUP_LIBRARY_NAME
    if not found.is_file():
        pytest.skip(f"{LOOKUP_LIBRARY_NAME} not built (cmake --build build --target bekc_lookup)")
    return found


def nvcc_chosen(stderr: str) -> Optional[Tuple[str, str]]:
    """(path, reason) from the `bekc: nvcc PATH (chosen by REASON)` line of a
    build run with --explain-key; None when there is no such line."""
    m = _NVCC_CHOSEN.search(stderr)
    return (m.group(1), m.group(2)) if m else None


def nvcc_choice(bekc: Path, env: Optional[Mapping[str, str]] = None,
                *options: str) -> Optional[Tuple[str, str]]:
    """(path, reason) of the nvcc `bekc build OPTIONS` uses for a .cu input in
    environment `env` (default: this process's); None when bekc finds none
    (exit 3). Any other failure fails the calling test."""
    with tempfile.TemporaryDirectory(prefix="bekc-nvcc-probe-") as tmp:
        src = Path(tmp) / "probe.cu"
        src.write_text(_NVCC_PROBE, encoding="utf-8")
        argv = [str(bekc), "build", str(src), "--arch", "sm_80", "--dry-run", "--explain-key",
                "--cache-dir", str(Path(tmp) / "cache"), *options]
        proc = subprocess.run(argv, cwd=tmp, env=dict(env if env is not None else os.environ),
                              capture_output=True, text=True, timeout=120)
    chosen = nvcc_chosen(proc.stderr)
    if proc.returncode == 0 and chosen:
        return chosen
    if proc.returncode == 3 and "nvcc not found" in proc.stderr:
        return None
    pytest.fail(f"asking bekc which nvcc it uses failed: {argv} exited with "
                f"{proc.returncode}\n{proc.stderr}")


def nvcc_of(bekc: Path, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The nvcc `bekc build` uses for a .cu input, or None (see nvcc_choice)."""
    choice = nvcc_choice(bekc, env)
    return choice[0] if choice else None


def nvcc_binary(bekc: Path, env: Optional[Mapping[str, str]] = None) -> str:
    """nvcc as bekc finds it; skips the calling test when there is none."""
    found = nvcc_of(bekc, env)
    if found is None:
        pytest.skip("bekc finds no nvcc (docs/cli.md, \"Which nvcc\")")
    return found
