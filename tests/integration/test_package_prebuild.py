"""`bekc build <package dir>` prebuilds what the package's loads then hit, on a small
fake package named brainevent whose Python code loads its CPU kernels the ways
brainevent 0.3.0 does (``Path(__file__).with_suffix(".cu")``, ``with_name``,
``parent / ...``, no ``name=``), with jaxlib installed beside it and no
virtualenv active.

After the prebuild, every load the package makes through bekc's loaders is a
cache hit on the module the prebuild made (the same manifest, so the same
key); files the package loads in ways a prebuild cannot reproduce are only
checked, under names no other file has, and the summary says why; a file that
includes a header the package does not ship is the package's defect, and the
rest still build. The same on brainevent's real files, with nvcc, is in
test_brainevent_kernels.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from prebuild import (REPO, TIMEOUT_S, jaxlib_package, loads_through_bekc, make_site,  # noqa: E402
                      modules_by_name, prebuild, without_venv)
from support.kernels import add_value_cpp  # noqa: E402

OPS_PY = """\
from pathlib import Path
from bekc import load_cpp_file


def load_all():
    # brainevent 0.3.0's forms: the .py file's own stem, a sibling, a subfolder.
    load_cpp_file(Path(__file__).with_suffix(".cpp"), name="fake_ops")
    load_cpp_file(Path(__file__).with_name("kern.cpp"))  # default name: the stem
    load_cpp_file(
        Path(__file__).parent / "sub" / "deep.cpp",
        name="fake_deep",
        verbose=False,
    )
"""

COMPUTED_PY = """\
from pathlib import Path
from bekc import load_cpp_file


def load_all(n=1):
    load_cpp_file(Path(__file__).parent / "twin.cpp", name=f"twin_{n}")
"""


def fake_package() -> dict:
    include = REPO / "runtime" / "include" / "brainevent"
    files = {f"include/brainevent/{h.name}": h for h in include.glob("*.h")}
    files.update({
        "__init__.py": "",
        "_ops/__init__.py": "",
        "_ops/ops.py": OPS_PY,
        "_ops/ops.cpp": add_value_cpp("plus_one", value="1.0f"),
        "_ops/kern.cpp": add_value_cpp("plus_two", value="2.0f"),
        "_ops/sub/deep.cpp": add_value_cpp("plus_three", value="3.0f"),
        # The same stem as _ops/ops.cpp, loaded by nobody: only checked.
        "_other/__init__.py": "",
        "_other/ops.cpp": add_value_cpp("plus_four", value="4.0f"),
        "_other/computed.py": COMPUTED_PY,
        "_other/twin.cpp": add_value_cpp("plus_five", value="5.0f"),
        # Includes a header the package does not ship.
        "_broken/tile.cpp": '#include "brainevent/common.h"\n#include "missing_tile.h"\n' +
                            add_value_cpp("tile", value="6.0f").split("\n", 1)[1],
    })
    return files


@pytest.fixture
def site(tmp_path) -> Path:
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    return make_site(tmp_path, fake_package())


def test_after_the_prebuild_every_load_of_the_package_is_a_cache_hit(bekc, site):
    built = prebuild(bekc, site, "-j", "2")
    assert built.returncode == 1, built.stderr  # the broken file
    report = json.loads(built.stdout.strip().splitlines()[-1])
    modules = modules_by_name(report)
    assert set(modules) == {"fake_ops", "kern", "fake_deep", "other_ops", "other_twin"}
    assert modules["fake_ops"]["loaded_at"] == "_ops/ops.py:7"
    assert modules["other_ops"]["loaded_at"] is None
    # XLA's headers from the jaxlib beside the package, no virtualenv active.
    commands = prebuild(bekc, site, "-j", "2", dry_run=True).stdout.splitlines()
    xla = (jaxlib_package() / "include").resolve()
    assert len(commands) == 6 and all(f"--xla-include={xla}" in c for c in commands), commands

    records = loads_through_bekc(bekc, site, [["module", "brainevent._ops.ops", "load_all"]])
    assert [r["name"] for r in records] == ["fake_ops", "kern", "fake_deep"]
    for r in records:
        assert r["cache_hit"], f"{r['name']}: the package's own load compiled again"
        assert r["manifest"] == modules[r["name"]]["manifest"], r["name"]  # the same key


def test_files_only_checked_or_broken_are_named_with_the_reason(bekc, site):
    dry = prebuild(bekc, site, "-j", "2", dry_run=True)
    assert dry.returncode == 0, dry.stderr
    built = prebuild(bekc, site, "-j", "2")
    package = (site / "brainevent").resolve()
    summary = (f"bekc: package {package}: 6 kernel files, 3 modules as the package loads "
               f"them, 3 only checked (their first use compiles)")
    # --dry-run prints the plan's summary line, as the real run does.
    assert dry.stderr.splitlines()[0] == summary
    assert built.stderr.splitlines()[0] == summary
    notes = [line for line in dry.stderr.splitlines() if line.startswith("bekc: note:")]
    assert notes == [
        "bekc: note: _broken/tile.cpp is only checked, as broken_tile: no load_cuda_file or "
        "load_cpp_file call of the package names it by a path bekc can evaluate",
        "bekc: note: _other/ops.cpp is only checked, as other_ops: no load_cuda_file or "
        "load_cpp_file call of the package names it by a path bekc can evaluate",
        "bekc: note: _other/twin.cpp is only checked, as other_twin: the package loads it only "
        "in ways a prebuild cannot reproduce (_other/computed.py:6: a computed name)",
    ]
    assert notes == [line for line in built.stderr.splitlines() if line.startswith("bekc: note:")]
    defect = ('the package\'s defect: it includes "missing_tile.h" (line 2), which the package '
              "does not ship, so the package's own loader cannot build it either")
    assert f"bekc: error: _broken/tile.cpp (as broken_tile) failed: {defect}" in built.stderr
    assert built.stderr.splitlines()[-1] == (
        f"bekc: 5 of 6 modules built (0 cache hits); 1 failed: _broken/tile.cpp ({defect})")
    report = json.loads(built.stdout.strip().splitlines()[-1])
    assert report["failed"] == [{"source": str(package / "_broken" / "tile.cpp"),
                                 "name": "broken_tile", "why": defect}]
    # The rest built; a second run is all hits.
    again = prebuild(bekc, site, "-j", "2")
    assert again.stderr.splitlines()[-1].startswith("bekc: 5 of 6 modules built (5 cache hits)")


def test_a_package_below_a_directory_whose_name_is_not_utf8(bekc, tmp_path):
    """A package below a directory named b"caf\\xe9" (a legal Linux name):
    every module builds, and --json names each source and manifest byte for
    byte."""
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    files = {k: v for k, v in fake_package().items() if not k.startswith("_broken/")}
    site = make_site(tmp_path / os.fsdecode(b"caf\xe9"), files)
    argv = [str(bekc.binary), "build", str(site / "brainevent"), "--cache-dir",
            str(bekc.cache_dir), "-j", "2", "--json"]
    # Bytes: the summary on stderr names the package's directory.
    proc = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S,
                          env=without_venv(site.parent))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    package = (site / "brainevent").resolve()
    assert report["package"] == str(package)
    assert {m["source"] for m in report["modules"]} == {
        str(package / rel) for rel in ("_ops/ops.cpp", "_ops/kern.cpp", "_ops/sub/deep.cpp",
                                       "_other/ops.cpp", "_other/twin.cpp")}
    for m in report["modules"]:
        assert Path(m["manifest"]).is_file(), m
