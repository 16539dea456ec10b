"""Hits without a compiler (docs/cache.md, "Hits without a compiler").

A build that finds no toolchain here (no host compiler, no nvcc for a CUDA
input) looks its portable key up: the inputs, the headers they read and the
options, without the toolchain. An entry is served only when its library
runs on this machine (its SASS and PTX against the GPUs, its CUDA release
against the driver, the processor and the C library). A changed source,
header or flag is a miss, and the error says that no compiler was found and
why no cache could serve the build.

Each run without a compiler happens in a private mount namespace (``unshare
-m``, as root) where hide_system_cuda.py --compilers has covered the CUDA
toolkit and every host compiler; skipped where that cannot be done.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from other_users import require_setpriv, shared_base  # tests/integration/other_users.py
from support.kernels import add_value_cpp, add_value_cu
from support.trees import listing

REPO = Path(__file__).resolve().parents[2]
HIDE = Path(__file__).with_name("hide_system_cuda.py")
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
NVCC = Path("/usr/local/cuda/bin/nvcc")
FAST = "-O0"


@pytest.fixture(scope="module")
def hidden():
    """Runs argv with nvcc and every host compiler hidden."""
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                            str(HIDE), "--compilers", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot hide the toolchain here (unshare -m as root): {probe.stderr}")

    def run(argv, env, cwd=None):
        return subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                               str(HIDE), "--compilers", *[str(a) for a in argv]],
                              env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    return run


def test_hiding_the_toolchain_never_reaches_the_callers_mounts(hidden):
    """hide_system_cuda.py run by hand, with no unshare around it, hides the
    compilers from its command only: the caller's g++ still runs after."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ here")
    inner = subprocess.run([sys.executable, str(HIDE), "--compilers", "sh", "-c",
                            "readlink /proc/self/ns/mnt; g++ --version"],
                           capture_output=True, text=True, timeout=60)
    assert inner.returncode != 0, "g++ still ran with the compilers hidden"
    assert inner.stdout.split()[0] != os.readlink("/proc/self/ns/mnt")
    assert subprocess.run([gxx, "--version"], capture_output=True).returncode == 0


def _env(home: Path, **extra) -> dict:
    env = {"HOME": str(home), "PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _build(bekc_path, argv, env, cwd=None):
    """`bekc build ARGV --json` with the toolchain in place."""
    r = subprocess.run([str(bekc_path), "build", *map(str, argv), "--json"], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _hidden_build(hidden, bekc_path, argv, env, cwd=None):
    return hidden([bekc_path, "build", *argv, "--json"], env, cwd)


def _json(r) -> dict:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _needs_nvcc():
    if not NVCC.is_file():
        pytest.skip("nvcc is not installed here")


def _cuda_runtime_site() -> Path:
    """A site-packages holding pip's CUDA runtime (nvidia/cu13/lib/libcudart.so.13):
    what a machine with JAX's CUDA wheels and no toolkit has."""
    for site in sorted((REPO / ".venv-toolkit").glob("lib/python3*/site-packages")):
        if list(site.glob("nvidia/*/lib/libcudart.so.*")):
            return site
    pytest.skip("no pip CUDA runtime in .venv-toolkit (scripts/setup.sh installs it)")


def test_a_cpp_module_built_here_is_a_hit_with_no_compiler(bekc_path, hidden, tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(add_value_cpp("add_one"))
    env = _env(tmp_path / "home")
    cache = tmp_path / "cache"
    built = _build(bekc_path, [src, FAST, "--cache-dir", cache], env)
    r = _hidden_build(hidden, bekc_path, [src, FAST, "--cache-dir", cache, "-v"], env)
    hit = _json(r)
    assert hit["cache_hit"] and hit["key"] == built["key"], r.stderr
    assert hit["library"] == built["library"]
    # -v and --json say where the hit came from and what stood in for the toolchain.
    assert "hit by the portable key, from the own cache" in r.stderr
    assert "host code (x86_64" in hit["checked"]


def test_a_cuda_module_is_a_hit_with_no_nvcc_for_the_archs_it_holds(bekc_path, hidden, tmp_path):
    _needs_nvcc()
    site = _cuda_runtime_site()
    src = tmp_path / "k.cu"
    src.write_text(add_value_cu("add_one_gpu"))
    env = _env(tmp_path / "home")
    cache = tmp_path / "cache"
    built = _build(bekc_path, [src, FAST, "--arch", "sm_80,sm_90", "--cache-dir", cache], env)
    # The toolkit is hidden with nvcc: the CUDA runtime the library links is
    # pip's, in the Python site the loaders name.
    runtime = ["--python-site", site]
    # Asked for by name: every arch asked must have its SASS in the library.
    for asked in ("sm_90", "sm_80,sm_90", "auto"):
        hit = _json(_hidden_build(hidden, bekc_path,
                                  [src, FAST, "--arch", asked, "--cache-dir", cache, *runtime],
                                  env))
        assert hit["key"] == built["key"]
        assert "SASS sm_80,sm_90, PTX compute_90 (CUDA 13" in hit["checked"]
    r = _hidden_build(hidden, bekc_path,
                      [src, FAST, "--arch", "sm_100", "--cache-dir", cache, *runtime], env)
    assert r.returncode == 3, r.stderr
    assert "no host C++ compiler found" in r.stderr and "sm_100 was asked for" in r.stderr
    # No CUDA runtime anywhere: the library could not be loaded here.
    r = _hidden_build(hidden, bekc_path, [src, FAST, "--arch", "sm_90", "--cache-dir", cache],
                      env)
    assert r.returncode == 3, r.stderr
    assert "libcudart.so.13, which is neither loaded nor installed here" in r.stderr


@pytest.mark.parametrize("change", ["source", "header", "flag", "option"])
def test_a_change_is_a_miss_and_says_no_compiler_was_found(bekc_path, hidden, tmp_path, change):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "value.h").write_text("#define VALUE 1.0f\n")
    src = tmp_path / "k.cpp"
    src.write_text(add_value_cpp("add_one", includes=["value.h"], value="VALUE"))
    env = _env(tmp_path / "home")
    cache = tmp_path / "cache"
    args = [src, FAST, "-I", inc, "--cache-dir", cache]
    _build(bekc_path, args, env)
    assert _hidden_build(hidden, bekc_path, args, env).returncode == 0
    if change == "source":
        src.write_text(src.read_text() + "\n// edited\n")
    elif change == "header":
        (inc / "value.h").write_text("#define VALUE 2.0f\n")
    elif change == "flag":
        args += ["-D", "EXTRA=1"]
    else:
        args += ["--cxx-flag", "-fno-math-errno"]
    r = _hidden_build(hidden, bekc_path, args, env)
    assert r.returncode == 3, r.stderr
    assert "no host C++ compiler found" in r.stderr
    assert "note: no cache holds a build of these inputs that runs here" in r.stderr


def test_python_loaders_hit_with_no_compiler(bekc_path, hidden, tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(add_value_cpp("add_file"))
    script = tmp_path / "load.py"
    script.write_text(f"""
import sys, bekc
inline = bekc.load_cpp_inline("inline_mod", {add_value_cpp('add_inline')!r})
from_file = bekc.load_cpp_file({str(src)!r})
print(sorted(inline.targets) if hasattr(inline, "targets") else inline)
print("loaded", from_file)
""")
    env = _env(tmp_path / "home", PYTHONPATH=REPO / "python", BEKC=bekc_path,
               BEKC_CACHE_DIR=tmp_path / "cache")
    python = REPO / ".venv" / "bin" / "python"
    first = subprocess.run([python, script], env=env, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stderr
    again = hidden([python, script], env)
    assert again.returncode == 0, again.stderr
    assert "loaded" in again.stdout
    # A changed inline source cannot be built: the loader raises bekc's error.
    script.write_text(script.read_text().replace("add_inline", "add_other"))
    failed = hidden([python, script], env)
    assert failed.returncode != 0
    assert "no host C++ compiler found" in failed.stderr


def test_a_package_installed_elsewhere_hits_from_the_first_ones_cache(bekc_path, hidden,
                                                                      tmp_path):
    """Paths under a Python site directory count relative to it: a package's
    kernels built in one environment serve the same package installed in
    another, as a pack does."""
    def install(root: Path) -> Path:
        pkg = root / "lib" / "python3.11" / "site-packages" / "demo"
        (pkg / "include").mkdir(parents=True)
        (pkg / "include" / "value.h").write_text("#define VALUE 3.0f\n")
        (pkg / "k.cpp").write_text(add_value_cpp("add_three", includes=["value.h"],
                                                 value="VALUE"))
        return pkg
    first, second = install(tmp_path / "env1"), install(tmp_path / "env2")
    env = _env(tmp_path / "home")
    built = _build(bekc_path, [first / "k.cpp", FAST, "-I", first / "include", "--cache-dir",
                               tmp_path / "team"], env)
    args = [second / "k.cpp", FAST, "-I", second / "include", "--cache-dir", tmp_path / "own",
            "--read-only-caches", tmp_path / "team"]
    hit = _json(_hidden_build(hidden, bekc_path, args, env))
    assert hit["key"] == built["key"] and hit["layer"] == str(tmp_path / "team")
    # The second environment's header is checked, not the first's.
    (second / "include" / "value.h").write_text("#define VALUE 4.0f\n")
    assert _hidden_build(hidden, bekc_path, args, env).returncode == 3


def test_another_user_with_no_compiler_hits_from_a_read_only_team_cache(bekc_path, hidden):
    """Two users: one builds into a team cache; the other, with no compiler
    and a cache of their own, is served from it, and nothing in it changes."""
    require_setpriv(bekc_path, "another user")
    base = shared_base("bekc-portable-")
    try:
        src = base / "k.cpp"
        src.write_text(add_value_cpp("add_team"))
        os.chmod(src, 0o644)
        team = base / "team"
        env = _env(base / "home-builder")
        built = _build(bekc_path, [src, FAST, "--cache-dir", team], env)
        for d, _, files in os.walk(team):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(Path(d) / f, 0o644)
        before = listing(team)
        home = base / "home-user"
        home.mkdir()
        os.chown(home, 60301, 60301)
        user_env = _env(home)
        r = hidden(["setpriv", "--reuid=60301", "--regid=60301", "--clear-groups", bekc_path,
                    "build", src, FAST, "--read-only-caches", team, "--json", "-v"], user_env)
        hit = _json(r)
        assert hit["key"] == built["key"] and hit["layer"] == str(team)
        assert f"from {team}" in r.stderr
        assert listing(team) == before, "a hit wrote into the read-only cache"
    finally:
        shutil.rmtree(base, ignore_errors=True)
