"""nvcc's phases run by bekc (plan/nvcc_phases) on the GPU machine: a library
whose device code came partly from the step cache runs correctly, and the
SASS and PTX of a split build are nvcc's own, by cuobjdump.

    python -m pytest -q tests/gpu/test_nvcc_split_gpu.py
    (brainevent's binary_densemv.cu: $BRAINEVENT_PACKAGE, else the
    importable brainevent)
"""
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bekc
from conftest import BEKC

from support.kernels import SCALE_ANONYMOUS_CU, SCALE_PLAIN_CU


def gpu_arch():
    major, minor = jax.devices("gpu")[0].compute_capability.split(".")
    return int(major) * 10 + int(minor)


def run(*args, env=None):
    done = subprocess.run([BEKC, *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))
    assert done.returncode == 0, done.stderr
    return done


def test_a_library_with_reused_device_code_runs(tmp_path):
    (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
    src = tmp_path / "scale.cu"
    src.write_text(SCALE_ANONYMOUS_CU)
    mine = gpu_arch()
    other = 80 if mine != 80 else 90
    first = sorted({other, mine})
    added = sorted({other, mine, 100 if mine != 100 else 120})
    cache = tmp_path / "cache"
    run("build", src, "--arch", ",".join(map(str, first)), "--cache-dir", cache)
    done = run("build", src, "-v", "--json", "--arch", ",".join(map(str, added)),
               "--cache-dir", cache)
    reused = [line for line in done.stderr.splitlines() if line.startswith("# reused: ")]
    assert any(f"cicc compute_{mine}" in line for line in reused), done.stderr
    assert any(line.startswith("# reused: nvcc ") for line in reused), done.stderr
    manifest = done.stdout.strip().splitlines()[-1]
    mod = bekc.load(__import__("json").loads(manifest)["manifest"])
    x = jnp.arange(1000, dtype=jnp.float32)
    out = jax.jit(lambda x: mod.scale(x, out=jax.ShapeDtypeStruct(x.shape, x.dtype)))(x)
    np.testing.assert_allclose(np.asarray(out), np.asarray(x) * 2 + 1)


def cuobjdump(library, what):
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.path.exists(tool):
        pytest.skip("cuobjdump is not installed")
    text = subprocess.run([tool, what, str(library)], capture_output=True, text=True,
                          check=True).stdout
    # The library's own path is in the header lines.
    return re.sub(r"\S*lib\w+\.so", "LIB", text)


def brainevent_dir():
    if os.environ.get("BRAINEVENT_PACKAGE"):
        return pathlib.Path(os.environ["BRAINEVENT_PACKAGE"])
    spec = importlib.util.find_spec("brainevent")
    return pathlib.Path(spec.origin).parent if spec and spec.origin else None


@pytest.mark.parametrize("case", ["plain", "binary_densemv"])
def test_split_sass_and_ptx_are_nvccs(tmp_path, case):
    args = []
    if case == "plain":
        (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
        src = tmp_path / "plain.cu"
        src.write_text(SCALE_PLAIN_CU)
    else:
        package = brainevent_dir()
        if package is None or not (package / "_dense" / "binary_densemv.cu").exists():
            pytest.skip("brainevent's sources are not here")
        src = package / "_dense" / "binary_densemv.cu"
        args = ["-I", package / "include"]
    libs = {}
    for split in ("1", "0"):
        done = run("build", src, *args, "--arch", "sm_80,sm_90,sm_100", "--json",
                   "--cache-dir", tmp_path / f"cache{split}", env={"BEKC_SPLIT_NVCC": split})
        libs[split] = __import__("json").loads(done.stdout.strip().splitlines()[-1])["library"]
    for what in ("-sass", "-ptx"):
        assert cuobjdump(libs["1"], what) == cuobjdump(libs["0"], what), what
