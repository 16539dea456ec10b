"""Settings and fixtures every test suite starts from.

bekc reads ``$XDG_CONFIG_HOME/bekc/bekc.conf`` (else ``~/.config/bekc``),
``$BEKC_CONFIG`` and ``$BEKC_LOG`` (docs/cli.md, "Configuration"): a developer's
own file or log must not steer the tests, so they get an empty configuration
directory of their own. Tests of the configuration set these themselves.

The programs the tests run are found in one place, tests/support/binaries.py,
which says the rules: the fixtures ``bekc_path``, ``numba_library`` and
``nvcc`` below.
"""

import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import binaries  # noqa: E402

os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="bekc-test-config-")
# Readable by the tests that run bekc as another user (setpriv), like a home.
os.chmod(os.environ["XDG_CONFIG_HOME"], 0o755)
for _var in ("BEKC_CONFIG", "BEKC_LOG", "BEKC_BASE_DIR"):
    os.environ.pop(_var, None)


@pytest.fixture(scope="session")
def bekc_path() -> Path:
    """The bekc binary under test; skipped when not built, failed when a
    variable names a missing file."""
    return binaries.bekc_binary()


@pytest.fixture(scope="session")
def numba_library(bekc_path) -> Path:
    """libbekc_numba.so of the build under test."""
    return binaries.numba_library(bekc_path)


@pytest.fixture(scope="session")
def lookup_library(bekc_path) -> Path:
    """libbekc_lookup.so of the build under test."""
    return binaries.lookup_library(bekc_path)


@pytest.fixture(scope="session")
def nvcc(bekc_path) -> str:
    """The nvcc bekc builds .cu inputs with; tests that need a real CUDA
    compile (not a GPU) take this fixture and are skipped without one."""
    return binaries.nvcc_binary(bekc_path)
