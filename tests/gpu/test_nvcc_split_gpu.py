"""nvcc's phases run by bekc (plan/nvcc_phases) on the GPU machine: a library
whose device code came partly from the step cache runs correctly, a first
build (a fresh cache, cicc beside cudafe++ with bekc's module id) runs
correctly, also two of them with same-named anonymous-namespace kernels in
one process, and the SASS and PTX of a split build are nvcc's own, by
cuobjdump, the module id in the anonymous namespace's names apart.

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

from support.device_names import anonymous_names_hidden
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


def scale_module(tmp_path, name, scale):
    """A first build, in a cache of its own, of SCALE_ANONYMOUS_CU in its own
    directory: scale_kernel and bias in an anonymous namespace."""
    d = tmp_path / name
    d.mkdir()
    (d / "scale.h").write_text(f"#define SCALE {scale}.0f\n")
    (d / "scale.cu").write_text(SCALE_ANONYMOUS_CU)
    done = run("build", d / "scale.cu", "--name", name, "--json", "--arch", str(gpu_arch()),
               "--cache-dir", tmp_path / f"cache-{name}")
    return bekc.load(__import__("json").loads(done.stdout.strip().splitlines()[-1])["manifest"])


def test_first_builds_with_same_named_anonymous_kernels_run_side_by_side(tmp_path):
    """Two modules built for the first time from files of one name, each with
    an anonymous namespace's scale_kernel and bias, loaded in one process:
    each runs its own kernel (the host code registers it under the device
    name bekc's module id gave it)."""
    two = scale_module(tmp_path, "scale_two", 2)
    three = scale_module(tmp_path, "scale_three", 3)
    x = jnp.arange(1000, dtype=jnp.float32)
    for mod, scale in ((two, 2), (three, 3)):
        out = jax.jit(lambda x, mod=mod: mod.scale(x, out=jax.ShapeDtypeStruct(x.shape,
                                                                               x.dtype)))(x)
        np.testing.assert_allclose(np.asarray(out), np.asarray(x) * scale + 1)


def cuobjdump(library, what):
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.path.exists(tool):
        pytest.skip("cuobjdump is not installed")
    text = subprocess.run([tool, what, str(library)], capture_output=True, text=True,
                          check=True).stdout
    # The library's own path is in the header lines.
    return anonymous_names_hidden(re.sub(r"\S*lib\w+\.so", "LIB", text))


def brainevent_dir():
    if os.environ.get("BRAINEVENT_PACKAGE"):
        return pathlib.Path(os.environ["BRAINEVENT_PACKAGE"])
    spec = importlib.util.find_spec("brainevent")
    return pathlib.Path(spec.origin).parent if spec and spec.origin else None


@pytest.mark.parametrize("case", ["plain", "anonymous", "binary_densemv"])
def test_split_sass_and_ptx_are_nvccs(tmp_path, case):
    """A first build (a fresh cache) against one nvcc process."""
    args = []
    if case in ("plain", "anonymous"):
        (tmp_path / "scale.h").write_text("#define SCALE 2.0f\n")
        src = tmp_path / f"{case}.cu"
        src.write_text(SCALE_PLAIN_CU if case == "plain" else SCALE_ANONYMOUS_CU)
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
