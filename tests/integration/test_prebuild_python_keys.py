"""The package prebuild and bekc's Python loaders give one build the same
cache key: `bekc build <package> --arch=...` writes each module's command
through to_argv (prep/build_args), the loaders write theirs in Python
(build_argv), and after the prebuild each load the package makes, with the
architecture pinned in another spelling through brainevent's
$BRAINEVENT_COMPUTE_CAPABILITIES, is a cache hit on the prebuilt manifest:
CUDA kernels, under a name given with `name=`, a file stem that is not a C++
identifier ("my-ops"), and the stem of the loading module.
"""

from __future__ import annotations

import json

import pytest

from prebuild import (REPO, jaxlib_package, loads_through_bekc, make_site,  # noqa: E402
                      modules_by_name, prebuild)

KERNEL = """\
#include "brainevent/common.h"
// @BE {fn}
void {fn}(const BE::Tensor x, BE::Tensor out, int64_t stream) {{}}
"""

OPS_PY = """\
from pathlib import Path
from bekc import load_cuda_file


def load_all():
    load_cuda_file(Path(__file__).with_suffix(".cu"), name="cu_ops")
    load_cuda_file(Path(__file__).with_name("my-ops.cu"))  # the stem, not an identifier
    load_cuda_file(Path(__file__).parent / "plain.cu")
"""


def fake_package() -> dict:
    include = REPO / "runtime" / "include" / "brainevent"
    files = {f"include/brainevent/{h.name}": h for h in include.glob("*.h")}
    files.update({
        "_ops/__init__.py": "",
        "_ops/ops.py": OPS_PY,
        "_ops/ops.cu": KERNEL.format(fn="one"),
        "_ops/my-ops.cu": KERNEL.format(fn="two"),
        "_ops/plain.cu": KERNEL.format(fn="three"),
    })
    return files


# (the prebuild's --arch, the pin the package's Python process has)
SPELLINGS = [("8.6,sm_90", "sm_90, 86"), ("compute_80", "8.0")]


@pytest.mark.parametrize("arch, pinned", SPELLINGS)
def test_prebuild_and_python_loads_share_keys(bekc, nvcc, tmp_path, arch, pinned):
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    site = make_site(tmp_path, fake_package())
    built = prebuild(bekc, site, f"--arch={arch}", "-j", "2")
    assert built.returncode == 0, built.stderr
    modules = modules_by_name(json.loads(built.stdout.strip().splitlines()[-1]))
    assert set(modules) == {"cu_ops", "my-ops", "plain"}, built.stderr
    assert all(m["loaded_at"] for m in modules.values()), modules
    # The package's three loads, each stopped after its build (no GPU to load on).
    ops = (site / "brainevent" / "_ops").resolve()
    calls = [["load_cuda_file", str(ops / "ops.cu"), "cu_ops"],
             ["load_cuda_file", str(ops / "my-ops.cu"), ""],
             ["load_cuda_file", str(ops / "plain.cu"), ""]]
    records = loads_through_bekc(bekc, site, calls, stop=True,
                                 BRAINEVENT_COMPUTE_CAPABILITIES=pinned)
    assert [r["name"] for r in records] == ["cu_ops", "my-ops", "plain"]
    for r in records:
        assert r["cache_hit"], f"{r['name']}: the package's own load compiled again"
        assert r["manifest"] == modules[r["name"]]["manifest"], r["name"]  # the same key
