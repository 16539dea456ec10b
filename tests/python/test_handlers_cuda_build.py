"""CUDA, compile only: a realistic .cu file built by bekc with --arch sm_90.

Needs nvcc (not a GPU). Checks the manifest and the library's dynamic symbol
table: every exported function has its two handlers (`bekc_ffi_<fn>` and
`bekc_ffi_<fn>_nograph`) and nothing else of the user's code is exported
(host helpers, kernels, device functions). Symbols the C++ runtime emits
with default visibility (libstdc++ template instances, namespace std) are
not the user's and are allowed.

The bekc binary and the nvcc it uses: ``bekc_path`` and ``nvcc``
(tests/support/binaries.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(REPO, "tests", "harness", "kernels", "handlers_cuda.cu")

USER_NAMES = ["vector_add", "scale_by", "axpy", "blocks_for", "user_device_helper",
              "vector_add_kernel", "scale_kernel", "axpy_kernel", "user_host_function_not_exported",
              "kThreads"]


@pytest.fixture(scope="module")
def cuda_build(bekc_path, nvcc, tmp_path_factory):
    if not shutil.which("nm"):
        pytest.skip("nm not found")
    cache = tmp_path_factory.mktemp("bekc-cuda-cache")
    proc = subprocess.run([str(bekc_path), "build", KERNEL, "--arch", "sm_90", "--cache-dir", str(cache),
                           "--json", "-q"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    result = json.loads(proc.stdout)
    with open(result["manifest"]) as f:
        manifest = json.load(f)
    return result, manifest


def dynamic_symbols(library):
    """Defined symbols of the dynamic symbol table: {mangled: demangled}."""
    out = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True,
                         check=True).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    filt = shutil.which("c++filt")
    demangled = (subprocess.run([filt], input="\n".join(names), capture_output=True, text=True,
                                check=True).stdout.splitlines() if filt and names else names)
    return dict(zip(names, demangled))


def test_manifest_records_cuda_targets(cuda_build):
    result, manifest = cuda_build
    assert manifest["toolchain"]["archs"] == ["sm_90"]
    assert manifest["toolchain"]["nvcc"] is not None
    targets = {t["function"]: t for t in manifest["targets"]}
    assert sorted(targets) == ["axpy", "scale_by", "vector_add"]
    assert targets["vector_add"]["arg_spec"] == ["arg", "arg", "ret", "stream"]
    assert targets["scale_by"]["arg_spec"] == ["arg", "ret", "attr.scale_factor:float32", "stream"]
    assert targets["axpy"]["arg_spec"] == ["arg", "arg", "ret", "attr.alpha:float64", "stream"]
    for fn, t in targets.items():
        assert t["platform"] == "CUDA"
        assert t["symbol"] == f"bekc_ffi_{fn}"
        assert t["command_buffer_compatible"] is True


def test_library_exports_handlers_and_nothing_of_the_user(cuda_build):
    result, manifest = cuda_build
    symbols = dynamic_symbols(result["library"])
    handlers = sorted(s for s in symbols if s.startswith("bekc_ffi_"))
    assert handlers == sorted(f"bekc_ffi_{fn}{suffix}" for fn in ("vector_add", "scale_by", "axpy")
                              for suffix in ("", "_nograph"))
    others = {m: d for m, d in symbols.items() if not m.startswith("bekc_ffi_")}
    for mangled, demangled in others.items():
        # Only the C++ runtime's own default-visibility instances may appear.
        assert "std::" in demangled or mangled.startswith(("_ZSt", "_ZNSt", "_ZNKSt", "_ZZNSt")), \
            f"unexpected export {mangled} ({demangled})"
        for name in USER_NAMES:
            assert name not in demangled, f"user symbol exported: {demangled}"
        assert "BE::" not in demangled and "bekc_rt" not in demangled, demangled


def test_library_embeds_sm_90_code(cuda_build, nvcc):
    result, _ = cuda_build
    cuobjdump = os.path.join(os.path.dirname(nvcc), "cuobjdump")
    if os.access(cuobjdump, os.X_OK):
        out = subprocess.run([cuobjdump, "--list-elf", result["library"]], capture_output=True,
                             text=True).stdout
        assert "sm_90" in out, out
        return
    # Without cuobjdump: the fat binary is there and its cubin was built for sm_90
    # (ptxas/nvlink record their command line in the image).
    with open(result["library"], "rb") as f:
        data = f.read()
    assert b".nv_fatbin" in data
    assert b"-arch sm_90 " in data
