"""A CUDA toolkit from pip, with the system CUDA hidden: bekc finds and uses it.

scripts/setup.sh installs requirements-toolkit.txt (nvidia-cuda-nvcc and the
wheels it needs, as jax[cuda13] brings them) into .venv-toolkit. Each build
here runs in a private mount namespace (``unshare -m``, as root) where
hide_system_cuda.py has covered /usr/local/cuda, so the only nvcc is pip's:
from the command line with that venv active or with only its python3 on PATH,
and from bekc's Python loaders run by an interpreter that has the wheels. The
order of the search is tested with stub nvccs (shell scripts that print a
version, as test fixtures; bekc runs them by argument vector) and against
brainevent's own choice while bekc stands in for brainevent's loaders.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from support.binaries import nvcc_choice, nvcc_chosen
from support.elf import dynamic
from support.kernels import add_value_cu

REPO = Path(__file__).resolve().parents[2]
TOOLKIT_VENV = REPO / ".venv-toolkit"
HIDE = Path(__file__).with_name("hide_system_cuda.py")
SOURCE = add_value_cu("add_one")
ARCH = "sm_80"
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def _toolkit_site() -> Path:
    for site in sorted(TOOLKIT_VENV.glob("lib/python3*/site-packages")):
        if (site / "nvidia" / "cu13" / "bin" / "nvcc").is_file():
            return site
    pytest.skip(f"no pip CUDA toolkit in {TOOLKIT_VENV} (scripts/setup.sh installs it)")


@pytest.fixture(scope="module")
def site() -> Path:
    return _toolkit_site()


@pytest.fixture(scope="module")
def hidden():
    """Runs argv with the system CUDA hidden; skips where that cannot be done."""
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                            str(HIDE), "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot hide /usr/local/cuda here (unshare -m as root): {probe.stderr}")

    def run(argv, env, cwd=None):
        return subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                               str(HIDE), *[str(a) for a in argv]],
                              env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    return run


def _env(tmp_path, **extra) -> dict:
    env = {"HOME": str(tmp_path / "home"), "PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _chosen(stderr: str) -> tuple:
    chosen = nvcc_chosen(stderr)
    assert chosen, stderr
    return chosen


def _pip_nvcc(site: Path) -> str:
    return str(site / "nvidia" / "cu13" / "bin" / "nvcc")


def _build(bekc_path, src, cache, *extra):
    return [bekc_path, "build", src, "--arch", ARCH, "--cache-dir", cache, "--json",
            "--explain-key", *extra]


@pytest.mark.parametrize("activated", [True, False], ids=["venv-active", "python3-on-path"])
def test_cli_builds_with_the_pip_toolkit_alone(bekc_path, site, hidden, tmp_path, activated):
    src = tmp_path / "k.cu"
    src.write_text(SOURCE)
    extra = {"VIRTUAL_ENV": TOOLKIT_VENV} if activated else {}
    env = _env(tmp_path, PATH=f"{TOOLKIT_VENV}/bin:{SYSTEM_PATH}", **extra)
    r = hidden(_build(bekc_path, src, tmp_path / "cache"), env)
    assert r.returncode == 0, r.stderr
    assert _chosen(r.stderr) == (_pip_nvcc(site), f"pip toolkit nvidia/cu13 in {site}")
    # The toolkit's wheels are in the key: pip upgrades CCCL apart from nvcc.
    assert "nvidia_cuda_cccl-13.3.5.0.6.dist-info" in r.stdout
    lib = Path(r.stdout.strip().splitlines()[-1].split('"library":')[1].split('"')[1])
    assert lib.is_file()
    # It links the wheel's shared CUDA runtime (a wheel has no libcudart.so to
    # name with -lcudart), found through its RUNPATH where JAX has not loaded
    # one already: the library loads with only pip's CUDA on the machine.
    needed, runpath = dynamic(lib)  # binutils' readelf: nvcc's link needs binutils too
    assert "libcudart.so.13" in needed
    assert str(site / "nvidia" / "cu13" / "lib") in runpath
    loads = hidden([TOOLKIT_VENV / "bin" / "python", "-c",
                    "import ctypes, sys; ctypes.CDLL(sys.argv[1])", lib], env)
    assert loads.returncode == 0, loads.stderr


def test_doctor_says_which_nvcc_and_why(bekc_path, site, hidden, tmp_path):
    env = _env(tmp_path, PATH=f"{TOOLKIT_VENV}/bin:{SYSTEM_PATH}", VIRTUAL_ENV=TOOLKIT_VENV)
    r = hidden([bekc_path, "doctor", "--cache-dir", tmp_path / "cache"], env)
    assert r.returncode == 0, r.stderr
    root = site / "nvidia" / "cu13"
    lines = r.stdout.splitlines()
    assert f"nvcc           {root}/bin/nvcc (version 13.5.37)" in lines, r.stdout
    assert f"nvcc chosen by pip toolkit nvidia/cu13 in {site}" in lines
    assert f"CUDA include   {root}/include, {root}/include/cccl" in lines
    wheels = next(l for l in lines if l.startswith("CUDA wheels"))
    for name in ("nvidia_cuda_nvcc-13.5.37", "nvidia_cuda_cccl-13.3.5.0.6", "nvidia_nvvm-13.5.37"):
        assert name + ".dist-info" in wheels


def test_nothing_found_lists_every_place_and_the_wheels(bekc_path, site, hidden, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(SOURCE)
    r = hidden(_build(bekc_path, src, tmp_path / "cache"), _env(tmp_path))
    assert r.returncode == 3, r.stderr
    # The error, then the notes of a build that found no cache to serve it
    # without a compiler (docs/cache.md, "Hits without a compiler").
    line = next(l for l in r.stderr.splitlines() if l.startswith("bekc: error:"))
    assert line.startswith("bekc: error: nvcc not found, and a .cu input needs it. Searched: ")
    assert r.stderr.strip().splitlines()[-1].startswith("note: a hit needs no compiler")
    assert "; nvcc on PATH; /usr/local/cuda/bin/nvcc. Install the CUDA toolkit (pip install " \
           "nvidia-cuda-nvcc, or pip install \"jax[cuda13]\", in the active Python " \
           "environment; or NVIDIA's installer), or point bekc at it with --nvcc PATH, " \
           "BEKC_NVCC=PATH or CUDA_HOME=/path/to/cuda." in line


def test_a_toolkit_without_cccl_names_the_wheel(bekc_path, site, hidden, tmp_path):
    # The toolkit without nvidia-cuda-cccl: hard links to the wheels' files
    # (nvcc finds its nvcc.profile beside itself), less CCCL's directories.
    copy = tmp_path / "site-packages"
    copy.mkdir()
    r = subprocess.run(["cp", "-al", str(site / "nvidia"), str(copy / "nvidia")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot hard-link the toolkit into {tmp_path}: {r.stderr}")
    root = copy / "nvidia" / "cu13"
    for d in ("include/cccl", "include/nv"):
        shutil.rmtree(root / d)
    src = tmp_path / "k.cu"
    src.write_text("#include <nv/target>\n" + SOURCE)
    r = hidden(_build(bekc_path, src, tmp_path / "cache", f"--python-site={copy}"), _env(tmp_path))
    assert r.returncode == 1, r.stderr
    assert _chosen(r.stderr)[0] == str(root / "bin" / "nvcc")
    assert (f"note: the CUDA toolkit from pip at {root} has no CCCL headers (nv/target, cub, "
            "thrust, cuda/std); install them into the same Python environment: pip install "
            "nvidia-cuda-cccl") in r.stderr.splitlines(), r.stderr


def _python_env(tmp_path: Path, *sites: Path) -> Path:
    """A venv whose interpreter sees `sites` (the toolkit, the test venv's
    packages, bekc's python/) through a .pth file: a Python environment with
    exactly those packages."""
    venv = tmp_path / "pyenv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    purelib = Path(subprocess.run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "zz_test_paths.pth").write_text("".join(f"{s}\n" for s in sites))
    return venv


LOADER_SCRIPT = textwrap.dedent("""\
    import sys
    import bekc
    src = open(sys.argv[1]).read()
    try:
        m = bekc.load_cuda_inline("pip_toolkit_mod", src, compute_capability="8.0",
                                  auto_register=False, verbose=True)
    except bekc.CompileError as e:
        print(e.stderr, file=sys.stderr)
        sys.exit(e.returncode)
    print(m.library_path)
""")


def _venv_site() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def test_python_loader_uses_its_interpreters_toolkit(bekc_path, site, hidden, tmp_path):
    venv = _python_env(tmp_path, site, _venv_site(), REPO / "python")
    script = tmp_path / "load.py"
    script.write_text(LOADER_SCRIPT)
    src = tmp_path / "k.cu"
    src.write_text(SOURCE)
    env = _env(tmp_path, PATH=f"{venv}/bin:{SYSTEM_PATH}", VIRTUAL_ENV=venv, BEKC=bekc_path,
               BEKC_CACHE_DIR=tmp_path / "cache")
    r = hidden([venv / "bin" / "python", script, src], env)
    assert r.returncode == 0, r.stderr
    # verbose=True echoes bekc's -v output: its compile commands run pip's nvcc.
    assert _pip_nvcc(site) in r.stderr
    assert Path(r.stdout.strip().splitlines()[-1]).is_file()


def test_python_loader_error_names_python_fixes(bekc_path, hidden, tmp_path):
    venv = _python_env(tmp_path, _venv_site(), REPO / "python")
    purelib = next(venv.glob("lib/python3*/site-packages"))
    script = tmp_path / "load.py"
    script.write_text(LOADER_SCRIPT)
    src = tmp_path / "k.cu"
    src.write_text(SOURCE)
    env = _env(tmp_path, PATH=f"{venv}/bin:{SYSTEM_PATH}", BEKC=bekc_path,
               BEKC_CACHE_DIR=tmp_path / "cache")
    r = hidden([venv / "bin" / "python", script, src], env)
    assert r.returncode == 3, r.stderr
    assert (
        "bekc: error: nvcc not found, and a .cu input needs it. Searched: pip toolkits "
        "(nvidia/cu*/bin/nvcc, nvidia/cuda_nvcc/bin/nvcc) in " f"{purelib.resolve()}"
        "; nvcc on PATH; /usr/local/cuda/bin/nvcc. Install the CUDA toolkit into this Python "
        "environment (pip install nvidia-cuda-nvcc, or pip install \"jax[cuda13]\"), or name "
        "one with an environment variable: BEKC_NVCC=/path/to/nvcc or "
        "CUDA_HOME=/path/to/cuda.") in r.stderr.splitlines()


# ------------------------------------------------------------- the search order


def _stub_nvcc(path: Path, version: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V{version}'\n")
    path.chmod(0o755)
    return path


def _dry_run(bekc_path, env, *extra):
    """(nvcc, why) of a dry run: the tests' own nvcc fixture asks bekc the same way."""
    chosen = nvcc_choice(bekc_path, env, *extra)
    assert chosen is not None, "bekc found no nvcc"
    return chosen


def _stub_pip_toolkit(site):
    """A CUDA 13 pip toolkit under `site`: a stub nvcc 13.5.37 and the files
    bekc checks the other wheels for. Returns the nvcc."""
    nvcc = _stub_nvcc(site / "nvidia" / "cu13" / "bin" / "nvcc", "13.5.37")
    for f in ("nvvm/bin/cicc", "include/crt/host_defines.h", "include/cuda_runtime.h",
              "lib/libcudart_static.a"):
        (site / "nvidia" / "cu13" / f).parent.mkdir(parents=True, exist_ok=True)
        (site / "nvidia" / "cu13" / f).write_text("")
    return nvcc


def test_search_order_with_stub_nvccs(bekc_path, tmp_path):
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    pip = _stub_pip_toolkit(site)
    on_path = _stub_nvcc(tmp_path / "pathbin" / "nvcc", "13.0.1")
    home = _stub_nvcc(tmp_path / "home_cuda" / "bin" / "nvcc", "13.0.2")
    be = _stub_nvcc(tmp_path / "be" / "nvcc", "13.0.3")
    mine = _stub_nvcc(tmp_path / "mine" / "nvcc", "13.0.4")
    env = _env(tmp_path, PATH=f"{on_path.parent}:{SYSTEM_PATH}", VIRTUAL_ENV=tmp_path / "venv")
    assert _dry_run(bekc_path, env) == (str(pip), f"pip toolkit nvidia/cu13 in {site}")
    assert _dry_run(bekc_path, env, "--nvcc-prefer", "system") == \
        (str(on_path), "PATH, with system nvcc preferred")
    assert _dry_run(bekc_path, dict(env, BEKC_NVCC_PREFER="system")) == \
        (str(on_path), "PATH, with system nvcc preferred")
    env["CUDA_HOME"] = str(home.parent.parent)
    assert _dry_run(bekc_path, env) == (str(home), "$CUDA_HOME")
    assert _dry_run(bekc_path, env, f"--brainevent-nvcc={be}") == \
        (str(be), "brainevent's BRAINEVENT_NVCC_PATH")
    env["BEKC_NVCC"] = str(mine)
    assert _dry_run(bekc_path, env, f"--brainevent-nvcc={be}") == (str(mine), "$BEKC_NVCC")
    assert _dry_run(bekc_path, env, f"--nvcc={be}") == (str(be), "--nvcc")


BRAINEVENT_SCRIPT = textwrap.dedent("""\
    import os, subprocess, sys
    import bekc
    from bekc import _compat
    bekc.use_for_brainevent()
    import brainevent.config
    from brainevent._op import kernix_toolchain as kt
    if sys.argv[2] == "system":
        brainevent.config.prefer_system_nvcc()
    theirs = kt._select_nvcc()[0]
    with _compat.building_for_brainevent():  # a build brainevent asked for
        argv, _ = _compat._loader_argv([sys.argv[1]], name="m", flag_kind="cuda",
                                       compute_capability="8.0")
    argv = [os.environ["BEKC"]] + argv[1:] + ["--dry-run", "--explain-key"]
    r = subprocess.run(argv, capture_output=True, text=True)
    line = [l for l in r.stderr.splitlines() if l.startswith("bekc: nvcc ")]
    print(theirs)
    print(line[0].split(" ")[2] if line else "NONE: " + r.stderr)
""")


@pytest.mark.parametrize("prefer", ["pip", "system"])
@pytest.mark.parametrize("brainevent_path", [False, True], ids=["", "BRAINEVENT_NVCC_PATH"])
def test_choice_matches_brainevents_while_routing(bekc_path, tmp_path, prefer, brainevent_path):
    pytest.importorskip("brainevent")
    site = tmp_path / "tk" / "site-packages"
    pip = _stub_pip_toolkit(site)
    on_path = _stub_nvcc(tmp_path / "pathbin" / "nvcc", "13.0.1")
    venv = _python_env(tmp_path, site, _venv_site(), REPO / "python")
    script = tmp_path / "route.py"
    script.write_text(BRAINEVENT_SCRIPT)
    src = tmp_path / "k.cu"
    src.write_text(SOURCE)
    env = _env(tmp_path, PATH=f"{venv}/bin:{on_path.parent}:{SYSTEM_PATH}", BEKC=bekc_path,
               BEKC_CACHE_DIR=tmp_path / "cache", JAX_PLATFORMS="cpu")
    if brainevent_path:
        env["BRAINEVENT_NVCC_PATH"] = str(_stub_nvcc(tmp_path / "be" / "nvcc", "13.0.3"))
    r = subprocess.run([str(venv / "bin" / "python"), str(script), str(src), prefer], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    theirs, ours = r.stdout.strip().splitlines()[-2:]
    expected = env.get("BRAINEVENT_NVCC_PATH") or (str(pip) if prefer == "pip" else str(on_path))
    assert os.path.realpath(theirs) == expected
    assert ours == theirs
