"""`bekc inspect --device-code LIB`: the SASS and PTX architectures of the fat
binaries a built library embeds, as JSON. For libraries nvcc links from two
translation units under several -gencode combinations (compressed fat
binaries or not), the answer is what the -gencode options asked for and what
cuobjdump lists (when a cuobjdump is found beside nvcc or on PATH). A library
bekc builds holds SASS for each --arch and PTX for the highest; a C++-only
library holds none; a file that is not ELF is a usage error naming it.

Real nvcc compiles here; no GPU is needed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

TWO_UNITS = {
    "scale.cu": "__global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }\n"
                "void launch_scale(float* x) { scale<<<1, 32>>>(x); }\n",
    "shift.cu": "__global__ void shift(float* x) { x[threadIdx.x] += 1.0f; }\n"
                "void launch_shift(float* x) { shift<<<1, 32>>>(x); }\n",
}


def gencode(arch: str, code: str) -> list:
    return ["-gencode", f"arch={arch},code={code}"]


# name: (nvcc options, SASS, PTX)
CASES = {
    "sm_80": (gencode("compute_80", "sm_80"), ["sm_80"], []),
    "sm_80_sm_90_ptx_90": (gencode("compute_80", "sm_80") + gencode("compute_90", "sm_90") +
                           gencode("compute_90", "compute_90"), ["sm_80", "sm_90"], ["compute_90"]),
    "sm_90a": (gencode("compute_90a", "sm_90a"), ["sm_90a"], []),
    "ptx_80_only": (gencode("compute_80", "compute_80"), [], ["compute_80"]),
    "sm_80_ptx_80_uncompressed": (["--no-compress"] + gencode("compute_80", "sm_80") +
                                  gencode("compute_80", "compute_80"), ["sm_80"], ["compute_80"]),
    "sm_90a_ptx_90a_all_compressed": (["-Xfatbin", "-compress-all"] +
                                      gencode("compute_90a", "sm_90a") +
                                      gencode("compute_90a", "compute_90a"),
                                      ["sm_90a"], ["compute_90a"]),
}


def device_code(bekc, library: Path) -> dict:
    proc = bekc.run("inspect", "--device-code", library)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def find_cuobjdump(nvcc: str):
    beside = Path(nvcc).parent / "cuobjdump"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("cuobjdump")


def cuobjdump_lists(tool: str, library: Path) -> dict:
    """cuobjdump's cubins (`ELF file 1: lib.1.sm_90a.cubin`) and PTX
    (`PTX file 1: lib.1.sm_90.ptx`, which names the compute_90 code)."""
    out = subprocess.run([tool, "--list-elf", "--list-ptx", str(library)], capture_output=True,
                         text=True).stdout
    sass = {m.group(1) for m in re.finditer(r"^ELF file\s+\d+: .*\.(sm_\w+)\.cubin$", out, re.M)}
    ptx = {"compute_" + m.group(1)
           for m in re.finditer(r"^PTX file\s+\d+: .*\.sm_(\w+)\.ptx$", out, re.M)}
    return {"sass": sorted(sass), "ptx": sorted(ptx)}


def sorted_archs(names: list) -> list:
    """Arch names in bekc's order: by number, then suffix."""
    return sorted(names, key=lambda n: (int(re.search(r"\d+", n).group()), n))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_archs_of_a_library_nvcc_linked_are_those_it_was_asked_for(bekc, nvcc, tmp_path,
                                                                        case):
    options, sass, ptx = CASES[case]
    sources = []
    for name, text in TWO_UNITS.items():
        (tmp_path / name).write_text(text)
        sources.append(str(tmp_path / name))
    library = tmp_path / f"lib{case}.so"
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", *options, *sources, "-o",
                    str(library)], check=True, capture_output=True, timeout=300)
    answer = device_code(bekc, library)
    assert answer == {"sass": sass, "ptx": ptx}
    tool = find_cuobjdump(nvcc)
    if tool:
        listed = cuobjdump_lists(tool, library)
        assert answer == {"sass": sorted_archs(listed["sass"]),
                          "ptx": sorted_archs(listed["ptx"])}


def test_a_library_bekc_built_holds_sass_for_each_arch_and_ptx_for_the_highest(bekc, kernels,
                                                                               nvcc):
    source = kernels.cu(bekc.workdir / "dev.cu", fn="dev_fn")
    built = bekc.build(source, "--arch", "80,90")
    assert device_code(bekc, built.library) == {"sass": ["sm_80", "sm_90"], "ptx": ["compute_90"]}


def test_a_cpp_only_library_holds_no_gpu_code(bekc, kernels):
    source = kernels.cpp(bekc.workdir / "host.cpp")
    built = bekc.build(source)
    assert device_code(bekc, built.library) == {"sass": [], "ptx": []}


def test_a_file_that_is_not_elf_is_a_usage_error_naming_it(bekc):
    fake = bekc.workdir / "libfake.so"
    fake.write_text("not a library\n")
    proc = bekc.run("inspect", "--device-code", fake)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"{fake}: error: not an ELF file"
    assert proc.stdout == ""


@pytest.mark.parametrize("what", ["missing", "directory", "fifo"])
def test_a_library_that_cannot_be_read_is_a_usage_error_naming_it(bekc, what):
    path = bekc.workdir / "libk.so"
    if what == "directory":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)
    proc = bekc.run("inspect", "--device-code", path, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"bekc: error: cannot read {path}: "), proc.stderr


def test_inspect_needs_sources_or_a_library_but_not_both(bekc, kernels):
    none = bekc.run("inspect")
    assert none.returncode == 2
    assert "bekc inspect needs at least one input, or --device-code LIB" in none.stderr
    source = kernels.cpp(bekc.workdir / "host.cpp")
    both = bekc.run("inspect", source, "--device-code", source)
    assert both.returncode == 2
    assert "bekc inspect --device-code takes no kernel source" in both.stderr
