"""The pip wheel (pyproject.toml, scikit-build-core): what it holds, that its
platform tag is honest about glibc, that a clean venv with only the wheel
installed builds and calls a .cpp kernel from JAX, and that CMake finds the
wheel's own bekc through ``python -m bekc --cmakedir``, from a moved venv too.

Compiling bekc again would cost CI minutes, so the wheel packages the binaries
of the build tree under test (``$BEKC_BINARY``'s directory, default
``<repo>/build``) through ``-C cmake.define.BEKC_PREBUILT_DIR``: the same
pyproject.toml, install rules and glibc check as a plain ``pip wheel .``, without
the compile. The build backend comes from the test venv (requirements-test.txt),
so nothing is downloaded; without it the tests are skipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from checked import run  # tests/integration/checked.py
from support.kernels import SCALE_CPP
from test_tutorial import README, command_lines, group, parse_blocks

REPO = Path(__file__).resolve().parents[2]
GLIBC_LIBRARIES = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                   "ld-linux-x86-64.so.2"}


def project_version() -> str:
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"project\(bekc VERSION ([0-9.]+)", text).group(1)


def glibc_tag(wheel: Path) -> str:
    """'2.36' from bekc-0.1.0-py3-none-manylinux_2_36_x86_64.whl."""
    m = re.search(r"-manylinux_(\d+)_(\d+)_x86_64\.whl$", wheel.name)
    assert m, f"{wheel.name} is not tagged manylinux_X_Y_x86_64"
    return f"{m.group(1)}.{m.group(2)}"


def version_tuple(v: str):
    return tuple(int(p) for p in v.split("."))


@pytest.fixture(scope="module")
def wheel(bekc_path, tmp_path_factory) -> Path:
    pytest.importorskip("scikit_build_core", reason="scikit-build-core (the wheel's build "
                        "backend, pinned in requirements-test.txt) is not installed")
    if sys.platform != "linux" or sysconfig.get_platform() != "linux-x86_64":
        pytest.skip("the wheel is tagged for x86-64 Linux")
    build = bekc_path.parent
    if not (build / "CMakeCache.txt").is_file() or not (build / "libbekc_numba.so").is_file():
        pytest.skip(f"{build} is not a CMake build tree with libbekc_numba.so")
    work = tmp_path_factory.mktemp("wheel")
    build_wheel, install = readme_wheel_commands()
    # The README's `pip wheel . --no-deps -w dist`, run from the repository root,
    # with what keeps it offline and skips compiling bekc again.
    assert build_wheel[:2] == ["pip", "wheel"] and build_wheel[2] == "."
    run([sys.executable, "-m", "pip", "wheel", REPO, *build_wheel[3:], "--no-build-isolation",
         "--no-index", "-C", f"build-dir={work / 'build'}",
         "-C", f"cmake.define.BEKC_PREBUILT_DIR={build}"], cwd=work)
    (found,) = (work / "dist").glob("bekc-*.whl")
    # The README installs the file the command made.
    assert install[:2] == ["pip", "install"] and work / install[2] == found, (
        f"README.md says `{' '.join(install)}`; the wheel is {found.name}")
    return found


def readme_wheel_commands():
    """The two commands of README.md's ``readme-wheel`` block."""
    (block,) = group(parse_blocks(README), "readme-wheel")
    commands = command_lines(block)
    assert len(commands) == 2, block.where()
    return commands


def test_wheel_holds_the_binary_the_library_and_the_package(wheel):
    version = project_version()
    assert wheel.name == f"bekc-{version}-py3-none-manylinux_{glibc_tag(wheel).replace('.', '_')}_x86_64.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        binary = z.getinfo(f"bekc-{version}.data/scripts/bekc")
        assert binary.external_attr >> 16 & 0o111, "bekc is not executable in the wheel"
        version_py = z.read("bekc/_version.py").decode()
    assert {"bekc/lib/libbekc_numba.so", "bekc/lib/libbekc_lookup.so", "bekc/__main__.py", "bekc/_binary.py",
            "bekc/py.typed", f"bekc-{version}.dist-info/licenses/LICENSE"} <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    # One version everywhere: CMake's project(), the package, and python/pyproject.toml.
    assert f'__version__ = "{version}"' in version_py
    assert f'version = "{version}"' in (REPO / "python" / "pyproject.toml").read_text()


def test_wheel_needs_only_the_glibc_its_tag_names(wheel, tmp_path):
    """Read the ELF files: only glibc's libraries are NEEDED, and no GLIBC_
    symbol version is newer than the manylinux tag (auditwheel's rule too)."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) not found")
    allowed = version_tuple(glibc_tag(wheel))
    with zipfile.ZipFile(wheel) as z:
        elves = [n for n in z.namelist() if z.read(n)[:4] == b"\x7fELF"]
        z.extractall(tmp_path)
    assert sorted(Path(n).name for n in elves) == ["bekc", "libbekc_lookup.so", "libbekc_numba.so"]
    for name in elves:
        elf = run([readelf, "-W", "-d", "-V", tmp_path / name]).stdout
        needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", elf))
        assert needed and needed <= GLIBC_LIBRARIES, f"{name} needs {needed - GLIBC_LIBRARIES}"
        versions = [version_tuple(v) for v in re.findall(r"Name: GLIBC_([0-9.]+)", elf)]
        assert max(versions) <= allowed, f"{name} needs GLIBC {max(versions)} > tag {allowed}"
        assert "GLIBCXX_" not in elf and "CXXABI_" not in elf  # libstdc++ linked in


def test_auditwheel_agrees_with_the_tag(wheel):
    if shutil.which("auditwheel", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("auditwheel (pinned in requirements-test.txt) is not installed")
    auditwheel = os.path.join(os.path.dirname(sys.executable), "auditwheel")
    report = json.loads(run([auditwheel, "show", "--json", wheel]).stdout)
    assert report["external_libs"] == {}
    assert report["overall_tag"] == f"manylinux_{glibc_tag(wheel).replace('.', '_')}_x86_64"


CALL = textwrap.dedent("""
    import os, sys
    import jax, jax.numpy as jnp, numpy as np
    import bekc
    from bekc._numba_cuda import find_numba_library
    venv = os.path.realpath(sys.prefix) + os.sep
    assert os.path.realpath(bekc.__file__).startswith(venv), bekc.__file__
    assert bekc.find_binary() == os.path.join(venv, "bin", "bekc"), bekc.find_binary()
    assert os.path.realpath(find_numba_library()).startswith(venv), find_numba_library()
    mod = bekc.load_cpp_inline("wheel_scale", sys.argv[1])
    x = jnp.arange(6, dtype=jnp.float32)
    np.testing.assert_allclose(jax.jit(lambda v: mod.scale(v, factor=3.0))(x), 3 * x)
    print("scale called")
""")


def install_in_fresh_venv(wheel: Path, venv: Path) -> Path:
    """A venv holding only the wheel (no index, no dependencies); NumPy and
    JAX come from the test venv through a .pth file, as a user's would from
    their environment. Returns its site-packages."""
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
         "--no-index", "--no-deps", "-q", wheel])
    site = Path(run([venv / "bin" / "python", "-c",
                     "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "test_env.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return site


def without_bekc(tmp_path: Path) -> dict:
    """Neither the build tree, $BEKC nor PATH points at a bekc; a private cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "BEKC", "BEKC_BINARY", "BEKC_NUMBA_LIBRARY",
                        "CMAKE_PREFIX_PATH", "bekc_DIR", "bekc_ROOT")}
    env.update(PATH="/usr/bin:/bin", JAX_PLATFORMS="cpu", BEKC_CACHE_DIR=str(tmp_path / "cache"))
    return env


def test_clean_venv_builds_and_calls_a_cpp_kernel(wheel, tmp_path):
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    install_in_fresh_venv(wheel, venv)
    env = without_bekc(tmp_path)

    installed = venv / "bin" / "bekc"
    assert installed.is_file() and os.access(installed, os.X_OK)
    version = project_version()
    assert version in run([installed, "--version"], env=env).stdout
    assert version in run([python, "-m", "bekc", "--version"], env=env).stdout
    # `bekc` on PATH once the venv's bin/ is there, as activating it does.
    on_path = dict(env, PATH=f"{venv / 'bin'}:{env['PATH']}")
    assert version in run(["bekc", "--version"], env=on_path).stdout

    done = run([python, "-c", CALL, SCALE_CPP], env=env, cwd=tmp_path)
    assert done.stdout.strip().endswith("scale called")


CMAKE_PACKAGE = ["bekcConfig.cmake", "bekcConfigVersion.cmake", "BekcPackage.cmake",
                 "BekcModule.cmake"]

PROBE_PROJECT = textwrap.dedent("""\
    cmake_minimum_required(VERSION 3.25)
    project(probe LANGUAGES NONE)
    find_package(bekc 0.1 REQUIRED)
    get_target_property(loc bekc::bekc IMPORTED_LOCATION)
    file(WRITE ${CMAKE_BINARY_DIR}/probe.json
         "{\\"exe\\": \\"${BEKC_EXECUTABLE}\\", \\"loc\\": \\"${loc}\\",
           \\"python\\": \\"${BEKC_PYTHONPATH}\\", \\"version\\": \\"${bekc_VERSION}\\",
           \\"dir\\": \\"${bekc_DIR}\\"}")
    bekc_add_module(ops SOURCES scale.cpp)
    """)


def test_wheel_holds_the_cmake_package(wheel):
    """bekc/share/cmake/bekc/ with the config and the helpers, and the
    cmake.prefix entry point that lets scikit-build-core builds find it."""
    version = project_version()
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        config = z.read("bekc/share/cmake/bekc/bekcConfig.cmake").decode()
        entry_points = z.read(f"bekc-{version}.dist-info/entry_points.txt").decode()
    assert {f"bekc/share/cmake/bekc/{n}" for n in CMAKE_PACKAGE} <= names
    assert f"bekc-{version}.dist-info/RECORD" in config  # finds the binary pip installed
    assert str(REPO) not in config and "build-wheel" not in config
    prefix_entry = re.compile(r"^\[cmake\.prefix\]\s*\nbekc\s*=\s*bekc\s*$", re.M)
    assert prefix_entry.search(entry_points), entry_points


def cmake_probe(project: Path, build: Path, env: dict, *args) -> dict:
    run([shutil.which("cmake"), "-S", project, "-B", build, *args], env=env)
    return json.loads((build / "probe.json").read_text())


def test_cmake_finds_the_wheels_bekc_through_python_m_bekc_cmakedir(wheel, tmp_path):
    """After `pip install` of the wheel alone, find_package(bekc REQUIRED)
    works with -Dbekc_DIR or CMAKE_PREFIX_PATH set to `python -m bekc
    --cmakedir`, and with the prefix the cmake.prefix entry point gives
    scikit-build-core. It names the venv's own bekc; from a moved venv, the
    moved one, which bekc_add_module() then builds with."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake not installed")
    venv = tmp_path / "venv"
    site = install_in_fresh_venv(wheel, venv)
    env = without_bekc(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(PROBE_PROJECT)
    (project / "scale.cpp").write_text(SCALE_CPP)

    def cmakedir(python: Path) -> str:
        printed = run([python, "-m", "bekc", "--cmakedir"], env=env).stdout.strip()
        same = run([python, "-c", "import bekc; print(bekc.get_cmake_dir())"], env=env)
        assert same.stdout.strip() == printed
        return printed

    found = cmakedir(venv / "bin" / "python")
    assert Path(found) == site / "bekc" / "share" / "cmake" / "bekc"
    entry = run([venv / "bin" / "python", "-c", textwrap.dedent("""\
        from importlib import metadata, resources
        (ep,) = metadata.entry_points(group="cmake.prefix")
        print(ep.name, ep.value, resources.files(ep.load()))""")], env=env).stdout.split()
    assert entry[:2] == ["bekc", "bekc"] and Path(entry[2]) == site / "bekc"
    for n, (args, extra_env) in enumerate([
            ([f"-Dbekc_DIR={found}"], {}),
            ([], {"CMAKE_PREFIX_PATH": found}),
            ([f"-DCMAKE_PREFIX_PATH={entry[2]}"], {})]):
        probe = cmake_probe(project, tmp_path / f"b{n}", dict(env, **extra_env), *args)
        assert Path(probe["exe"]).resolve() == (venv / "bin" / "bekc").resolve(), probe
        assert probe["loc"] == probe["exe"] and probe["version"] == project_version()
        assert Path(probe["python"]) == site and Path(probe["dir"]) == Path(found)

    moved = tmp_path / "moved" / "env"
    moved.parent.mkdir()
    shutil.move(str(venv), str(moved))
    found = cmakedir(moved / "bin" / "python")
    assert str(moved) in found
    build = tmp_path / "b-moved"
    probe = cmake_probe(project, build, env, f"-Dbekc_DIR={found}")
    assert Path(probe["exe"]) == moved / "bin" / "bekc", probe
    assert str(moved) in probe["python"]
    run([shutil.which("cmake"), "--build", build], env=env)
    manifest = json.loads((build / "bekc" / "ops" / "manifest.json").read_text())
    assert [t["name"] for t in manifest["targets"]] == ["ops.scale"]
