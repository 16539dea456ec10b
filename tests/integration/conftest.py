"""Shared fixtures for the build-driver and cache integration tests.

* ``bekc_path`` and ``nvcc`` (tests/conftest.py, from tests/support/binaries.py):
  the binary under test, and the nvcc it builds .cu inputs with.
* ``bekc``: a :class:`Bekc` runner bound to a fresh ``--cache-dir`` under the
  test's ``tmp_path``, so every test starts from an empty cache.
* ``kernels``: writers for small annotated kernel sources.

Every process is spawned with an argument vector, never through a shell.
Test modules take everything from fixtures (they do not import this file: the
Python suite in tests/python has a conftest module of the same name).
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import pytest

from support.kernels import add_value_cpp, add_value_cu

TIMEOUT_S = 300


def clean_env(**overrides: Optional[str]) -> dict:
    """The test process's environment without the variables that would steer bekc
    away from the test's own choices; ``None`` removes a variable."""
    env = dict(os.environ)
    for var in ("BEKC_CACHE_DIR",):
        env.pop(var, None)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@dataclass
class Build:
    """One `bekc build --json` run."""

    proc: subprocess.CompletedProcess
    info: Optional[dict]  # the --json object, None when the build failed

    @property
    def rc(self) -> int:
        return self.proc.returncode

    @property
    def stderr(self) -> str:
        return self.proc.stderr

    @property
    def hit(self) -> bool:
        assert self.info is not None, self.describe()
        return self.info["cache_hit"]

    @property
    def manifest_path(self) -> Path:
        assert self.info is not None, self.describe()
        return Path(self.info["manifest"])

    @property
    def manifest(self) -> dict:
        return json.loads(self.manifest_path.read_text())

    @property
    def key(self) -> str:
        return self.manifest["key"]

    @property
    def library(self) -> Path:
        assert self.info is not None, self.describe()
        return Path(self.info["library"])

    def describe(self) -> str:
        return (f"$ {' '.join(map(str, self.proc.args))}\n-> exit {self.proc.returncode}\n"
                f"--- stdout ---\n{self.proc.stdout}\n--- stderr ---\n{self.proc.stderr}")


class Bekc:
    """Runs the binary with a per-test cache directory."""

    def __init__(self, binary: Path, cache_dir: Path, workdir: Path):
        self.binary = binary
        self.cache_dir = cache_dir
        self.workdir = workdir

    def run(self, *args, cwd=None, env=None, timeout=TIMEOUT_S) -> subprocess.CompletedProcess:
        argv = [str(self.binary), *[str(a) for a in args]]
        return subprocess.run(argv, cwd=cwd or self.workdir, env=env or clean_env(),
                              capture_output=True, text=True, timeout=timeout)

    def build_argv(self, *args, cache_dir=None, json_output=True) -> list:
        argv = [str(self.binary), "build", *[str(a) for a in args],
                "--cache-dir", str(cache_dir or self.cache_dir)]
        if json_output:
            argv.append("--json")
        return argv

    def build(self, *args, ok: Optional[bool] = True, cwd=None, env=None, cache_dir=None,
              timeout=TIMEOUT_S) -> Build:
        """`bekc build ARGS --cache-dir D --json`. ``ok=True`` asserts exit 0,
        ``ok=False`` asserts failure, ``None`` checks nothing."""
        argv = self.build_argv(*args, cache_dir=cache_dir)
        proc = subprocess.run(argv, cwd=cwd or self.workdir, env=env or clean_env(),
                              capture_output=True, text=True, timeout=timeout)
        info = None
        if proc.returncode == 0:
            lines = proc.stdout.strip().splitlines()
            assert lines, f"no output on stdout\n{proc.stderr}"
            info = json.loads(lines[-1])
        result = Build(proc, info)
        if ok is True:
            assert proc.returncode == 0, result.describe()
        elif ok is False:
            assert proc.returncode != 0, result.describe()
        return result

    def cache(self, *args, cache_dir=None, env=None) -> subprocess.CompletedProcess:
        return self.run("cache", *args, "--cache-dir", cache_dir or self.cache_dir, env=env)

    def entries(self, cache_dir=None) -> list:
        """Published entry directories (entries/<2 hex>/<62 hex>)."""
        root = Path(cache_dir or self.cache_dir) / "entries"
        if not root.is_dir():
            return []
        return sorted(p for p in root.glob("*/*") if p.is_dir())


@pytest.fixture
def cache_dir(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def bekc(bekc_path, cache_dir, tmp_path) -> Bekc:
    work = tmp_path / "work"
    work.mkdir()
    return Bekc(bekc_path, cache_dir, work)


# --------------------------------------------------------------------------- sources
class Kernels:
    """Writes small annotated sources: ``cpp(path, fn=..., includes=[...])`` and
    ``cu(...)`` (out = x + value; tests/support/kernels.py), or ``text(path, body)``."""

    @staticmethod
    def _write(path: Path, text: str) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def cpp(self, path, fn="add_one", includes: Sequence[str] = (), value="1.0f",
            extra="") -> Path:
        return self._write(path, add_value_cpp(fn, includes, value, extra))

    def cu(self, path, fn="add_one_gpu", includes: Sequence[str] = (), value="1.0f",
           extra="") -> Path:
        return self._write(path, add_value_cu(fn, includes, value, extra))

    def text(self, path, body: str) -> Path:
        return self._write(path, textwrap.dedent(body))


@pytest.fixture
def kernels() -> Kernels:
    return Kernels()
