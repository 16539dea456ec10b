"""`cmake --install` of the bekc build tree: layout, relocation, the installed
Python package and the CMake package.

The build tree is the one holding the binary under test (``$BEKC_BINARY``'s
directory, default ``<repo>/build``); it must have been configured with the
current CMakeLists.txt, which `cmake --build` does. Everything else happens in
temporary directories; every process is spawned with an argument vector.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from checked import run  # tests/integration/checked.py

REPO = Path(__file__).resolve().parents[2]
PY_SUBDIR = Path("lib") / "bekc" / "python"

KERNEL = """\
#include "brainevent/common.h"
#include "offset.h"

// @BE add_offset
void add_offset(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i)
        out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + OFFSET;
}
"""


def build_dir_of(binary: Path) -> Path:
    build = binary.parent
    if not (build / "CMakeCache.txt").is_file():
        pytest.skip(f"{binary} is not in a CMake build tree; nothing to install")
    script = (build / "cmake_install.cmake").read_text()
    assert "lib/cmake/bekc" in script, (
        f"{build} was configured before the install rules existed: run "
        f"`cmake --build {build}` (or `cmake {build}`) first")
    return build


def install(binary: Path, prefix: Path, *extra) -> Path:
    run(["cmake", "--install", build_dir_of(binary), "--prefix", prefix, *extra])
    return prefix


def isolated_env(tmp: Path, **extra) -> dict:
    """No bekc on PATH, no $BEKC, a private cache: only the installed tree can answer."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("BEKC", "BEKC_CACHE_DIR", "PYTHONPATH", "MAKEFLAGS", "MAKELEVEL")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not (Path(p) / "bekc").exists())
    env["BEKC_CACHE_DIR"] = str(tmp / "cache")
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture(scope="module")
def prefix(bekc_path, tmp_path_factory) -> Path:
    return install(bekc_path, tmp_path_factory.mktemp("install") / "prefix")


def test_layout(prefix):
    assert os.access(prefix / "bin" / "bekc", os.X_OK)
    for name in ("bekcConfig.cmake", "bekcConfigVersion.cmake", "BekcPackage.cmake",
                 "BekcModule.cmake"):
        assert (prefix / "lib" / "cmake" / "bekc" / name).is_file(), name
    pkg = prefix / PY_SUBDIR / "bekc"
    assert (pkg / "__init__.py").is_file() and (pkg / "_loader.py").is_file()
    assert not list(pkg.rglob("__pycache__"))
    link = pkg / "bin" / "bekc"
    assert link.is_symlink() and not os.path.isabs(os.readlink(link)), "link must be relative"
    assert link.resolve() == (prefix / "bin" / "bekc").resolve()
    assert (prefix / "share" / "doc" / "bekc" / "docs" / "install.md").is_file()


def test_package_files_hold_no_absolute_path(prefix):
    for f in (prefix / "lib" / "cmake" / "bekc").iterdir():
        text = f.read_text()
        assert str(prefix) not in text, f"{f.name} names the install prefix"
        assert str(REPO) not in text, f"{f.name} names the source tree"


def test_binary_holds_no_build_tree_path(bekc_path, tmp_path):
    """Only debug information may name the source tree: nothing bekc reads at run time."""
    prefix = install(bekc_path, tmp_path / "stripped", "--strip")
    data = (prefix / "bin" / "bekc").read_bytes()
    for path in {str(REPO), str(bekc_path.parent)}:
        assert path.encode() not in data, f"the installed bekc still contains {path}"


def test_moved_prefix_builds_and_loads(prefix, tmp_path):
    """Copy the install, move the copy, and use it with nothing else on PATH."""
    copy = tmp_path / "copy"
    shutil.copytree(prefix, copy, symlinks=True)
    moved = tmp_path / "moved" / "opt-bekc"
    moved.parent.mkdir()
    shutil.move(str(copy), str(moved))
    assert not copy.exists()

    work = tmp_path / "work"
    work.mkdir()
    (work / "offset.h").write_text("#define OFFSET 2.0f\n")
    (work / "kern.cpp").write_text(KERNEL)
    env = isolated_env(tmp_path)
    bekc = moved / "bin" / "bekc"
    run([bekc, "--version"], cwd=tmp_path, env=env)
    out = run([bekc, "build", "kern.cpp", "-o", "out", "--depfile", "out/kern.d"], cwd=work,
              env=env)
    assert out.stdout.strip().splitlines()[-1] == "out/manifest.json"
    depfile = (work / "out" / "kern.d").read_text()
    assert "offset.h" in depfile and "kern.cpp" in depfile

    # The installed Python package, alone on PYTHONPATH: it finds the binary
    # through its relative bin/bekc link, loads the build and calls it under jit.
    script = textwrap.dedent(f"""
        import jax, jax.numpy as jnp, numpy as np, os
        import bekc
        assert bekc.__file__.startswith({str(moved)!r}), bekc.__file__
        found = bekc.find_binary()
        assert os.path.realpath(found) == os.path.realpath({str(bekc)!r}), found
        mod = bekc.load("out/manifest.json")
        x = jnp.arange(4, dtype=jnp.float32)
        np.testing.assert_allclose(jax.jit(mod.add_offset)(x), np.arange(4) + 2.0)
        src = open("kern.cpp").read().replace('#include "offset.h"', "#define OFFSET 5.0f")
        inline = bekc.load_cpp_inline("moved_inline", src)
        np.testing.assert_allclose(jax.jit(inline.add_offset)(x), np.arange(4) + 5.0)
        print("ok")
    """)
    done = run([sys.executable, "-c", script], cwd=work,
               env=isolated_env(tmp_path, PYTHONPATH=moved / PY_SUBDIR))
    assert done.stdout.strip().endswith("ok")


def test_cmake_package_follows_a_moved_prefix(prefix, tmp_path):
    """find_package(bekc) from a moved copy names paths inside the copy."""
    moved = tmp_path / "elsewhere" / "bekc"
    shutil.copytree(prefix, moved, symlinks=True)
    project = tmp_path / "project"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.25)
        project(probe LANGUAGES NONE)
        find_package(bekc 0.1 CONFIG REQUIRED)
        get_target_property(loc bekc::bekc IMPORTED_LOCATION)
        file(WRITE ${CMAKE_BINARY_DIR}/probe.json
             "{\\"exe\\": \\"${BEKC_EXECUTABLE}\\", \\"loc\\": \\"${loc}\\",
               \\"python\\": \\"${BEKC_PYTHONPATH}\\", \\"version\\": \\"${bekc_VERSION}\\"}")
        """))
    run(["cmake", "-S", project, "-B", tmp_path / "b", f"-DCMAKE_PREFIX_PATH={moved}"],
        env=isolated_env(tmp_path))
    probe = json.loads((tmp_path / "b" / "probe.json").read_text())
    assert Path(probe["exe"]) == moved / "bin" / "bekc"
    assert Path(probe["loc"]) == moved / "bin" / "bekc"
    assert Path(probe["python"]) == moved / PY_SUBDIR
    assert probe["version"].startswith("0.")


def test_installed_package_names_the_trees_cmake_dir(prefix, tmp_path):
    """`python -m bekc --cmakedir` and bekc.get_cmake_dir() of the installed
    Python package name the tree's lib/cmake/bekc; a source checkout's
    package has none, and says how to get one."""
    env = isolated_env(tmp_path, PYTHONPATH=prefix / PY_SUBDIR)
    printed = run([sys.executable, "-m", "bekc", "--cmakedir"], env=env).stdout.strip()
    assert Path(printed) == prefix / "lib" / "cmake" / "bekc"
    assert run([sys.executable, "-c", "import bekc; print(bekc.get_cmake_dir())"],
               env=env).stdout.strip() == printed
    source = subprocess.run([sys.executable, "-m", "bekc", "--cmakedir"], capture_output=True,
                            text=True, env=isolated_env(tmp_path, PYTHONPATH=REPO / "python"))
    assert source.returncode == 1 and source.stdout == ""
    assert "has no CMake package" in source.stderr and "pip install bekc" in source.stderr


def _cmake_cache(build_dir: Path) -> dict:
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        pytest.skip(f"{build_dir} is not a CMake build tree")
    entries = {}
    for line in cache.read_text().splitlines():
        if line and not line.startswith(("#", "//")) and "=" in line:
            key, value = line.split("=", 1)
            entries[key.split(":", 1)[0]] = value
    return entries


def test_default_build_needs_only_glibc_at_run_time(bekc_path):
    """BEKC_STATIC (the default) links libstdc++, libgcc, libcrypto and fmt into
    the binary: a hit is mostly process start-up, and the binary copies onto
    other distributions (docs/install.md)."""
    cache = _cmake_cache(bekc_path.parent)
    if cache.get("BEKC_SANITIZE") == "ON" or cache.get("BEKC_STATIC") == "OFF":
        pytest.skip("built with -DBEKC_STATIC=OFF or a sanitizer: shared libraries by design")
    if shutil.which("readelf") is None:
        pytest.skip("readelf not installed")
    dynamic = run(["readelf", "--dynamic", str(bekc_path)], check=True).stdout
    needed = {line.split("[", 1)[1].split("]", 1)[0]
              for line in dynamic.splitlines() if "(NEEDED)" in line}
    assert needed, dynamic
    glibc = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "ld-linux-x86-64.so.2"}
    assert needed <= glibc, f"bekc needs shared libraries beyond glibc: {sorted(needed - glibc)}"
    # Linked statically, it still works: the build's own version check.
    assert run([str(bekc_path), "--version"], check=True).stdout.startswith("bekc ")
