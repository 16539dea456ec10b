"""Fixtures for the GPU suite: build with the bekc binary, load with bekc.load.

Runs on the GPU machine through tests/gpu/run_all.sh; skipped where JAX has no
CUDA device (a CPU-only CI never collects this folder).
"""
import json
import pathlib
import subprocess

import jax
import pytest

import bekc

from support.binaries import DEFAULT_BEKC, bekc_candidate

HERE = pathlib.Path(__file__).resolve().parent
# The bekc under test (tests/support/binaries.py: $BEKC_BINARY, $BEKC, build/bekc);
# a module constant, since the tests hand it to scripts and subprocesses.
BEKC = str(bekc_candidate()[0] or DEFAULT_BEKC)


def has_cuda():
    try:
        return any(d.platform == "gpu" for d in jax.devices())
    except RuntimeError:
        return False


def pytest_collection_modifyitems(config, items):
    if has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA device visible to JAX")
    for item in items:
        item.add_marker(skip)


def x64():
    """A context with 64-bit types on, whatever this JAX calls it."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64  # older JAX; binds no local `jax`
    return enable_x64()


def build(*args, cache_dir):
    """Runs `bekc build ... --json` (argument list, no shell) and returns its JSON."""
    cmd = [BEKC, "build", *map(str, args), "--cache-dir", str(cache_dir), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stderr}"
    return json.loads(done.stdout)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("bekc-cache")


@pytest.fixture(scope="session")
def e2e(cache_dir):
    out = build(HERE / "kernels" / "cuda_e2e.cu", "--arch", "native", cache_dir=cache_dir)
    return bekc.load(out["manifest"])
