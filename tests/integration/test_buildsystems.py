"""bekc from build systems: examples/cmake_project (find_package + bekc_add_module,
Ninja and Unix Makefiles) against an installed bekc, and examples/make_project
(a Makefile that includes bekc's depfile).

For each: the first build runs bekc; a second build runs nothing; editing a
header the kernel includes reruns bekc and changes the manifest's key; the
result loads with bekc.load (PYTHONPATH=<repo>/python) and runs under jax.jit
on the CPU. Projects are copied to temporary directories; every process is
spawned with an argument vector.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checked import TIMEOUT_S, run  # tests/integration/checked.py
from support.kernels import NOOP_CPP

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CMAKE_STEP = "bekc: building module ops"


def tool_env(tmp: Path, **extra) -> dict:
    """A private cache; no variables from an enclosing make or build."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("BEKC", "BEKC_CACHE_DIR", "MAKEFLAGS", "MAKELEVEL", "MFLAGS",
                        "CMAKE_GENERATOR", "CMAKE_BUILD_PARALLEL_LEVEL", "DESTDIR")}
    env["BEKC_CACHE_DIR"] = str(tmp / "cache")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def python_env(tmp: Path) -> dict:
    return tool_env(tmp, PYTHONPATH=REPO / "python")


def key_of(manifest: Path) -> str:
    return json.loads(manifest.read_text())["key"]


def age(*outputs: Path, seconds: int = 5) -> None:
    """Move outputs' mtimes into the past, so that a file written next is
    strictly newer even where the filesystem keeps whole seconds (as CI's does)."""
    for out in outputs:
        st = out.stat()
        past = st.st_mtime_ns - seconds * 1_000_000_000
        os.utime(out, ns=(st.st_atime_ns, past))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path} no longer contains {old!r}"
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def prefix(bekc_path, tmp_path_factory) -> Path:
    """bekc installed from the build tree that holds the binary under test."""
    build = bekc_path.parent
    if not (build / "CMakeCache.txt").is_file():
        pytest.skip(f"{bekc_path} is not in a CMake build tree; nothing to install")
    assert "lib/cmake/bekc" in (build / "cmake_install.cmake").read_text(), (
        f"{build} was configured before the install rules existed: run `cmake --build {build}`")
    prefix = tmp_path_factory.mktemp("bekc-install") / "prefix"
    run(["cmake", "--install", build, "--prefix", prefix])
    return prefix


# --------------------------------------------------------------------------- CMake
GENERATORS = [
    pytest.param("Ninja", marks=pytest.mark.skipif(shutil.which("ninja") is None,
                                                   reason="ninja not installed")),
    "Unix Makefiles",
]


@pytest.mark.parametrize("generator", GENERATORS)
def test_cmake_project(generator, prefix, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(EXAMPLES / "cmake_project", src)
    build = tmp_path / "build"
    env = tool_env(tmp_path)
    run(["cmake", "-S", src, "-B", build, "-G", generator, f"-DCMAKE_PREFIX_PATH={prefix}",
         f"-DPython3_EXECUTABLE={sys.executable}"], env=env)
    manifest = build / "bekc" / "ops" / "manifest.json"

    first = run(["cmake", "--build", build], env=env)
    assert CMAKE_STEP in first.stdout
    assert manifest.is_file() and (manifest.parent / "libops.so").is_file()
    key1, stamp1 = key_of(manifest), manifest.stat().st_mtime_ns

    noop = run(["cmake", "--build", build], env=env)
    assert CMAKE_STEP not in noop.stdout, noop.stdout
    assert manifest.stat().st_mtime_ns == stamp1

    age(*(p for p in manifest.parent.iterdir() if p.is_file()))
    edit(src / "kernels" / "ops.h", "kBias = 1.0f", "kBias = 4.0f")
    rebuilt = run(["cmake", "--build", build], env=env)
    assert CMAKE_STEP in rebuilt.stdout, "editing an included header must rerun bekc"
    key2 = key_of(manifest)
    assert key2 != key1

    again = run(["cmake", "--build", build], env=env)
    assert CMAKE_STEP not in again.stdout, again.stdout

    # Loaded from the repository's Python package, called under jax.jit.
    done = run([sys.executable, src / "run.py", manifest], env=python_env(tmp_path))
    assert f"bias=4 key={key2}" in done.stdout
    # ctest runs the same script through $<TARGET_PROPERTY:ops,BEKC_MANIFEST> and
    # the installed package (BEKC_PYTHONPATH).
    run(["ctest", "--output-on-failure"], cwd=build, env=env)


def test_cmake_module_options(prefix, tmp_path):
    """ARCH, FAST_MATH, OPT_LEVEL, DEFINITIONS, TARGET_PREFIX, MODULE_NAME and
    OUTPUT_DIR reach bekc (checked with --dry-run: no compiler runs)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cpp").write_text(NOOP_CPP)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\n"
        "project(opts LANGUAGES NONE)\n"
        "find_package(bekc CONFIG REQUIRED)\n"
        "bekc_add_module(opts_target SOURCES k.cpp MODULE_NAME mymod TARGET_PREFIX pfx\n"
        "  ARCH sm_80 sm_90 FAST_MATH OPT_LEVEL 1 DEFINITIONS N=3 INCLUDE_DIRECTORIES inc\n"
        "  OUTPUT_DIR out/here OPTIONS --dry-run)\n"
        "get_target_property(m opts_target BEKC_MANIFEST)\n"
        "get_target_property(p opts_target BEKC_TARGET_PREFIX)\n"
        "file(WRITE ${CMAKE_BINARY_DIR}/probe.txt \"${m}|${p}|${opts_target_MANIFEST}\")\n")
    build = tmp_path / "build"
    env = tool_env(tmp_path)
    run(["cmake", "-S", src, "-B", build, "-G", "Unix Makefiles",
         f"-DCMAKE_PREFIX_PATH={prefix}"], env=env)
    manifest, target_prefix, var = (build / "probe.txt").read_text().split("|")
    assert manifest == var == str(build / "out" / "here" / "manifest.json")
    assert target_prefix == "pfx"
    # The exact command CMake runs, from its verbose output (--dry-run makes
    # bekc print its plan and stop, so the build "fails" to produce the manifest).
    done = subprocess.run(["cmake", "--build", build, "--verbose"], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    line = next(l for l in done.stdout.splitlines() if " build " in l and "bekc" in l)
    for piece in ("--name mymod", f"-o {build}/out/here", "--target-prefix=pfx", "-O1",
                  "--fast-math", "--arch=sm_80,sm_90", "-D N=3", f"-I {src}/inc",
                  f"--depfile {build}/out/here/mymod.d", str(src / "k.cpp")):
        assert piece in line, f"{piece!r} not in {line!r}"


# --------------------------------------------------------------------------- Make
def test_make_project(bekc_path, tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    proj = tmp_path / "make_project"
    shutil.copytree(EXAMPLES / "make_project", proj)
    env = tool_env(tmp_path)
    make = ["make", "--no-print-directory", "-C", proj, f"BEKC={bekc_path}"]
    manifest = proj / "build" / "manifest.json"

    first = run(make, env=env)
    assert "--depfile build/kernels.d" in first.stdout
    assert manifest.is_file() and (proj / "build" / "kernels.d").is_file()
    key1, stamp1 = key_of(manifest), manifest.stat().st_mtime_ns

    noop = run(make, env=env)
    assert "Nothing to be done" in noop.stdout and str(bekc_path) not in noop.stdout
    assert manifest.stat().st_mtime_ns == stamp1

    # Touched but unchanged: bekc reruns, its cache answers, the key stays.
    age(manifest)
    os.utime(proj / "kernels.h")
    touched = run(make + ["BEKC_FLAGS=-O3 --json"], env=env)
    assert json.loads(touched.stdout.strip().splitlines()[-1])["cache_hit"] is True
    assert key_of(manifest) == key1

    age(manifest)
    edit(proj / "kernels.h", "KERNELS_OFFSET 1.0f", "KERNELS_OFFSET 3.0f")
    rebuilt = run(make, env=env)
    assert str(bekc_path) in rebuilt.stdout, "editing an included header must rerun bekc"
    key2 = key_of(manifest)
    assert key2 != key1
    assert "Nothing to be done" in run(make, env=env).stdout

    done = run(make + ["run", f"PYTHON={sys.executable}"], env=python_env(tmp_path))
    assert "offset=3 ok" in done.stdout
