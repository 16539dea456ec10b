"""`bekc build <package dir>` prebuilds what the package's loads then hit, on a small
fake package named brainevent whose Python code loads its CPU kernels the ways
brainevent 0.3.0 does (``Path(__file__).with_suffix(".cu")``, ``with_name``,
``parent / ...``, no ``name=``), with jaxlib installed beside it and no
virtualenv active.

After the prebuild, every load the package makes through bekc's loaders is a
cache hit on the module the prebuild made (the same manifest, so the same
key); files the package loads in ways a prebuild cannot reproduce are only
checked, under names no other file has, and the summary says why; a file that
is only checked and does not build (a header the package does not ship, flags
bekc cannot reproduce) is a note, not a failure, and the rest still build.
Flags a load passes as literals are reproduced. A directory bekc cannot read
is skipped and named, and the rest of the package is still built. The same on
brainevent's real files, with nvcc, is in test_brainevent_kernels.py.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
from pathlib import Path

import pytest

from other_users import require_setpriv, shared_base  # noqa: E402
from prebuild import (TIMEOUT_S, jaxlib_package, loads_through_bekc, make_site,  # noqa: E402
                      modules_by_name, prebuild, with_brainevent_headers, without_venv)
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
    return with_brainevent_headers({
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


@pytest.fixture
def site(tmp_path) -> Path:
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    return make_site(tmp_path, fake_package())


def test_after_the_prebuild_every_load_of_the_package_is_a_cache_hit(bekc, site):
    built = prebuild(bekc, site, "-j", "2")
    assert built.returncode == 0, built.stderr  # the broken file is only checked
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
    assert built.stderr.splitlines()[1:4] == notes
    defect = ('the package\'s defect: it includes "missing_tile.h" (line 2), which the package '
              "does not ship, so the package's own loader cannot build it either")
    # The package's own defect is a warning that names the file, not a failure.
    assert built.returncode == 0, built.stderr
    assert "bekc: error:" not in built.stderr
    assert (f"bekc: warning: _broken/tile.cpp (only checked, as broken_tile) did not build: "
            f"{defect} (-v shows the compiler's output)") in built.stderr
    assert built.stderr.splitlines()[-1] == (
        f"bekc: 5 of 6 modules built (0 cache hits); warning: 1 file the package cannot build "
        f"either: _broken/tile.cpp ({defect})")
    report = json.loads(built.stdout.strip().splitlines()[-1])
    assert report["failed"] == [] and report["check_failed"] == []
    assert report["defects"] == [{"source": str(package / "_broken" / "tile.cpp"),
                                  "name": "broken_tile", "why": defect}]
    # --package-defects=error makes the same defect fail the prebuild, for a
    # CI that wants the package to ship every header.
    strict = prebuild(bekc, site, "-j", "2", "--package-defects=error")
    assert strict.returncode == 1, strict.stderr
    assert (f"bekc: error: _broken/tile.cpp (only checked, as broken_tile) failed: "
            f"{defect}") in strict.stderr
    assert '{"error":' not in strict.stderr, "the child's --json object is not a message"
    assert strict.stderr.splitlines()[-1] == (
        f"bekc: 5 of 6 modules built (5 cache hits); 1 failed: _broken/tile.cpp ({defect})")
    # The rest built; a second run is all hits.
    again = prebuild(bekc, site, "-j", "2")
    assert again.stderr.splitlines()[-1].startswith("bekc: 5 of 6 modules built (5 cache hits)")


# A kernel that needs SCALE from the command line, as a package's load gives it.
NEEDS_SCALE = ('#ifndef SCALE\n#error "build me with -DSCALE=<float>"\n#endif\n' +
               add_value_cpp("scaled", value="SCALE"))

# A kernel that calls into a library the package links (cuBLAS, say).
NEEDS_LIBRARY = ('extern "C" float fake_blas_value();\n' +
                 add_value_cpp("linked", value="fake_blas_value()"))

FLAGS_PY = """\
from pathlib import Path
from bekc import load_cpp_file


def load_all():
    load_cpp_file(Path(__file__).parent / "literal.cpp", name="literal",
                  extra_cflags=["-DSCALE=2.0f"], extra_ldflags=("-lm",))
"""

COMPUTED_FLAGS_PY = """\
from pathlib import Path
from bekc import load_cpp_file


def load_all(scale=2, libs=()):
    load_cpp_file(Path(__file__).parent / "computed.cpp", extra_cflags=[f"-DSCALE={scale}"])
    load_cpp_file(Path(__file__).parent / "linked.cpp", extra_ldflags=list(libs))
"""


def flagged_package() -> dict:
    return with_brainevent_headers({
        "_flags/__init__.py": "",
        "_flags/flags.py": FLAGS_PY,
        "_flags/literal.cpp": NEEDS_SCALE,
        "_flags/computed_flags.py": COMPUTED_FLAGS_PY,
        "_flags/computed.cpp": NEEDS_SCALE,
        "_flags/linked.cpp": NEEDS_LIBRARY,
    })


def test_a_healthy_package_whose_loads_pass_flags_passes_its_prebuild(bekc, tmp_path):
    """Flags a load passes as literals are the module's flags, so the
    package's own load is a cache hit; a file loaded with flags bekc cannot
    know is compiled to check it, linked without --no-undefined (the library
    the package links is not there), and when it does not build without its
    flags that is a note: the prebuild succeeds."""
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    site = make_site(tmp_path, flagged_package())
    built = prebuild(bekc, site, "-j", "2")
    assert built.returncode == 0, built.stderr
    assert "bekc: error:" not in built.stderr
    report = json.loads(built.stdout.strip().splitlines()[-1])
    modules = modules_by_name(report)
    assert set(modules) == {"literal", "flags_linked"}
    assert modules["literal"]["loaded_at"] == "_flags/flags.py:6"
    # The library it calls into is not linked: the check compiles it, and passes.
    assert "extra_ldflags" in modules["flags_linked"]["only_checked"]
    assert report["failed"] == []
    assert [c["name"] for c in report["check_failed"]] == ["flags_computed"]
    assert built.stderr.splitlines()[-1] == (
        "bekc: 2 of 3 modules built (0 cache hits); note: 1 file only checked did not build: "
        "_flags/computed.cpp (it does not build (exited with code 1))")
    records = loads_through_bekc(bekc, site, [["module", "brainevent._flags.flags", "load_all"]])
    assert [r["name"] for r in records] == ["literal"]
    assert records[0]["cache_hit"], "the package's own load compiled again"
    assert records[0]["manifest"] == modules["literal"]["manifest"]  # the same key


def three_parts_package(hidden: str) -> dict:
    """A package of three kernel files, the second in the directory `hidden`."""
    return with_brainevent_headers({
        "_a/one.cpp": add_value_cpp("one", value="1.0f"),
        f"{hidden}/two.cpp": add_value_cpp("two", value="2.0f"),
        "_c/three.cpp": add_value_cpp("three", value="3.0f"),
    })


def write_package(root: Path, files: dict) -> Path:
    """ROOT/brainevent with `files`, and nothing beside it (make_site adds jaxlib)."""
    package = root / "brainevent"
    for rel, content in files.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(content.read_text() if isinstance(content, Path) else content)
    (package / "__init__.py").write_text("")
    return package


NOBODY = 65534


@pytest.fixture
def shared_tree(bekc_path):
    """A tree another user can reach (tests/integration/other_users.py)."""
    if os.geteuid() == 0:
        require_setpriv(bekc_path, f"uid {NOBODY}")
    base = shared_base("bekc-pkg-")
    for sub, mode in (("site", 0o755), ("cache", 0o777), ("home", 0o1777)):
        (base / sub).mkdir()
        os.chmod(base / sub, mode)
    yield base
    for dirpath, _, _ in os.walk(base):
        os.chmod(dirpath, 0o755)
    shutil.rmtree(base)


def test_a_directory_it_cannot_read_is_skipped_and_named(bekc_path, shared_tree):
    """A directory of the package bekc may not read (mode 000: run as
    another user, since root reads it anyway) is named in the summary and in
    --json; the files after it are still built, and the build succeeds."""
    package = write_package(shared_tree / "site", three_parts_package("_b/secret"))
    secret = package / "_b" / "secret"
    os.chmod(secret, 0)
    argv = [str(bekc_path), "build", str(package), "-j", "2", "--cache-dir",
            str(shared_tree / "cache"), "--json"]
    if os.geteuid() == 0:
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    env = without_venv(shared_tree)
    env.update(HOME=str(shared_tree / "home"), TMPDIR=str(shared_tree / "home"))
    proc = subprocess.run(argv, cwd=shared_tree / "home", env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == (f"bekc: package {package}: 2 kernel files, 0 modules as the package "
                        f"loads them, 2 only checked (their first use compiles), 1 path bekc "
                        f"cannot read")
    assert (f"bekc: note: _b/secret cannot be read (cannot open directory {secret}: Permission "
            f"denied): what is below it is neither built nor checked") in lines
    assert lines[-1] == "bekc: 2 of 2 modules built (0 cache hits)"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(m["name"] for m in report["modules"]) == ["a_one", "c_three"]
    assert report["not_read"] == [
        {"path": str(secret), "why": f"cannot open directory {secret}: Permission denied"}]


def test_a_directory_deeper_than_the_open_files_limit_is_read_whole(bekc_path, tmp_path):
    """A package whose directories nest deeper than the descriptors the
    process may hold at once (`ulimit -n 1024`, 1,100 levels) is read whole:
    bekc holds no descriptor per level. The deepest file's check name is too
    long, so it is counted and not built."""
    package = write_package(tmp_path, three_parts_package("_b"))
    levels = [package / "_b"]
    for _ in range(1100):  # one by one: pathlib's and os's makedirs recurse
        levels.append(levels[-1] / "d")
        levels[-1].mkdir()
    (package / "_b" / "two.cpp").rename(levels[-1] / "two.cpp")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    try:
        proc = subprocess.run(
            [str(bekc_path), "build", str(package), "--cache-dir", str(tmp_path / "cache"),
             "--dry-run"],
            capture_output=True, text=True, timeout=TIMEOUT_S, env=without_venv(tmp_path),
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard)))
    finally:
        (levels[-1] / "two.cpp").unlink()
        for level in reversed(levels[1:]):  # shutil.rmtree recurses too
            level.rmdir()
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == (
        f"bekc: package {package}: 3 kernel files, 0 modules as the package loads them, 2 only "
        f"checked (their first use compiles), 1 not built")
    assert len(proc.stdout.splitlines()) == 2


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
