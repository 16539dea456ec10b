"""Which CUDA runtime a CUDA library links (docs/cli.md, "--cudart").

By default the toolkit's shared libcudart.so.N, named by the library
(NEEDED) and found through its RUNPATH, the toolkit's library directory,
unless the process has already loaded a runtime of that soname (a JAX
process with CUDA has). ``--cudart=static`` links nvcc's default, the static
runtime; a ``-cudart`` option in the nvcc or link flags chooses the same way,
as it does for brainevent's pipeline, whose one nvcc command also links.

Real builds here need nvcc (no GPU); the toolkit without a shared runtime is a
stub nvcc that only prints its version, seen through ``--dry-run``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support.elf import dynamic

ARCH = "sm_80"

pytestmark = pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf is missing")


def toolkit_runtime(nvcc: str) -> Path:
    """The toolkit's libcudart.so.N, where bekc looks for it."""
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    major = re.search(r"release (\d+)\.", version).group(1)
    root = Path(nvcc).parent.parent
    for d in (root / "lib64", *sorted(root.glob("targets/*/lib"))):
        if (d / f"libcudart.so.{major}").is_file():
            return d / f"libcudart.so.{major}"
    pytest.skip(f"the toolkit of {nvcc} has no libcudart.so.{major}")


def test_a_cuda_library_links_the_toolkits_shared_runtime_by_default(bekc, kernels, nvcc):
    src = kernels.cu(bekc.workdir / "k.cu")
    build = bekc.build(src, "--arch", ARCH)
    runtime = toolkit_runtime(nvcc)
    needed, runpath = dynamic(build.library)
    assert runtime.name in needed
    assert str(runtime.parent) in runpath
    assert build.manifest["toolchain"]["cudart"] == "shared"
    # The static runtime's code is not in it: it is a fraction of the size.
    static = bekc.build(src, "--arch", ARCH, "--cudart=static")
    assert build.library.stat().st_size * 4 < static.library.stat().st_size


def test_static_runtime_from_the_option_or_from_nvccs_own_flag(bekc, kernels, nvcc):
    src = kernels.cu(bekc.workdir / "k.cu")
    static = bekc.build(src, "--arch", ARCH, "--cudart=static")
    needed, runpath = dynamic(static.library)
    assert not any(n.startswith("libcudart") for n in needed) and runpath == []
    assert static.manifest["toolchain"]["cudart"] == "static"
    # nvcc's spellings in --cuda-flag or --ldflag choose it too, and leave the flags.
    for flags in (["--cuda-flag=-cudart=static"], ["--cuda-flag=-cudart", "--cuda-flag=static"],
                  ["--ldflag=--cudart", "--ldflag=static"]):
        again = bekc.build(src, "--arch", ARCH, *flags)
        assert again.hit and again.key == static.key, flags
        assert again.manifest["flags"]["cuda_flags"] == [] == again.manifest["flags"]["ldflags"]
    # Two choices that differ, or one without a value: which runtime is meant is not said.
    both = bekc.build(src, "--arch", ARCH, "--cudart=static", "--cuda-flag=-cudart=shared", ok=False)
    assert both.rc == 2 and ("--cudart=static and --cuda-flag=-cudart=shared choose different "
                             "CUDA runtimes; give one") in both.stderr
    bare = bekc.build(src, "--arch", ARCH, "--cuda-flag=-cudart", ok=False)
    assert bare.rc == 2 and "--cuda-flag=-cudart needs a value: shared or static" in bare.stderr


def test_a_cpp_library_links_no_cuda_runtime(bekc, kernels):
    build = bekc.build(kernels.cpp(bekc.workdir / "k.cpp"), "--cudart=shared")
    needed, _ = dynamic(build.library)
    assert not any(n.startswith("libcudart") for n in needed)
    assert build.manifest["toolchain"]["cudart"] is None


def test_an_unknown_runtime_is_a_usage_error(bekc, kernels, nvcc):
    bad = bekc.build(kernels.cu(bekc.workdir / "k.cu"), "--arch", ARCH, "--cudart=dynamic",
                     ok=False)
    assert bad.rc == 2
    assert "--cudart=dynamic: the CUDA runtime is shared or static" in bad.stderr
    assert bekc.entries() == []


def _stub_toolkit(root: Path, with_runtime: bool) -> Path:
    nvcc = root / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
    nvcc.chmod(0o755)
    if with_runtime:
        (root / "lib64").mkdir()
        (root / "lib64" / "libcudart.so.13").write_text("")
    return nvcc


def _link_line(bekc, src, nvcc, *extra, env=None):
    proc = bekc.run("build", "--dry-run", "--cache-dir", bekc.cache_dir, src, "--arch", ARCH,
                    "--nvcc", nvcc, *extra, env=env)
    links = [l for l in proc.stdout.splitlines() if " -shared " in l]
    return proc, (links[-1] if links else "")


def test_a_toolkit_without_a_shared_runtime_links_the_static_one(bekc, kernels, tmp_path):
    src = kernels.cu(bekc.workdir / "k.cu")
    bare = _stub_toolkit(tmp_path / "bare", with_runtime=False)
    proc, link = _link_line(bekc, src, bare, "-v")
    assert proc.returncode == 0, proc.stderr
    assert " -cudart static " in link, link
    assert f"bekc: the static CUDA runtime: the toolkit of {bare} has no shared" in proc.stderr
    # Asked for explicitly, it is an error that says what to do.
    proc, _ = _link_line(bekc, src, bare, "--cudart=shared")
    assert proc.returncode == 3, proc.stderr
    assert f"the toolkit of {bare} has no shared CUDA runtime (libcudart.so." in proc.stderr
    assert "--cudart=static" in proc.stderr
    full = _stub_toolkit(tmp_path / "full", with_runtime=True)
    proc, link = _link_line(bekc, src, full)
    runtime = tmp_path / "full" / "lib64" / "libcudart.so.13"
    assert f" -cudart none -Xlinker {runtime} -Xlinker -rpath -Xlinker {runtime.parent}" in link
    # nvcc's device link names the runtime as -lcudart: without a libcudart.so
    # beside it (a pip toolkit's case), relocatable device code links the static one.
    proc, link = _link_line(bekc, src, full, "--cuda-flag=-rdc=true")
    assert proc.returncode == 0, proc.stderr
    assert " -cudart static " in link, link
    proc, _ = _link_line(bekc, src, full, "--cuda-flag=-rdc=true", "--cudart=shared")
    assert proc.returncode == 3 and "has no libcudart.so" in proc.stderr, proc.stderr
    (runtime.parent / "libcudart.so").symlink_to(runtime.name)
    proc, link = _link_line(bekc, src, full, "--cuda-flag=-rdc=true")
    assert f" -cudart shared -L{runtime.parent} -Xlinker -rpath -Xlinker {runtime.parent}" in link


def test_relocatable_device_code_links_the_shared_runtime_too(bekc, kernels, nvcc):
    runtime = toolkit_runtime(nvcc)
    if not (runtime.parent / "libcudart.so").exists():
        pytest.skip(f"{runtime.parent} has no libcudart.so for nvcc's -lcudart")
    build = bekc.build(kernels.cu(bekc.workdir / "k.cu"), "--arch", ARCH, "--cuda-flag=-rdc=true")
    needed, runpath = dynamic(build.library)
    assert runtime.name in needed and str(runtime.parent) in runpath
    assert build.manifest["toolchain"]["cudart"] == "shared"


def test_a_runtime_under_the_base_directory_is_not_linked_shared(bekc, kernels, tmp_path):
    """A library keyed relative to $BEKC_BASE_DIR serves every checkout: it
    cannot carry this checkout's toolkit directory as its RUNPATH."""
    src = kernels.cu(bekc.workdir / "k.cu")
    full = _stub_toolkit(tmp_path / "checkout" / "tk", with_runtime=True)
    env = dict(os.environ, BEKC_BASE_DIR=str(tmp_path / "checkout"))
    env.pop("BEKC_CACHE_DIR", None)
    proc, link = _link_line(bekc, src, full, env=env)
    assert proc.returncode == 0, proc.stderr
    assert " -cudart static " in link, link
    proc, _ = _link_line(bekc, src, full, "--cudart=shared", env=env)
    assert proc.returncode == 3 and "is under $BEKC_BASE_DIR" in proc.stderr, proc.stderr
    proc, link = _link_line(bekc, src, full, env=dict(env, BEKC_BASE_DIR=str(bekc.workdir)))
    assert " -cudart none " in link, link
