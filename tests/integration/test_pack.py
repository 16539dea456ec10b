"""`bekc pack` (docs/packs.md): the modules of a package, of a recording of
loads, or of a cache, copied with their portable records into a fresh cache
directory that machines use as a read-only cache. With the pack as a
read-only cache and nvcc and every host compiler hidden, every load the pack
holds is a hit, the own cache gets nothing but what a hit writes, and
nothing in the pack changes; a changed file in the pack is never served.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prebuild import REPO, TIMEOUT_S, jaxlib_package, make_site, without_venv
from support.kernels import add_value_cpp
from support.trees import listing
from test_package_prebuild import fake_package
from test_portable_hits import hidden  # noqa: F401  (the fixture)

LOADS = [["module", "brainevent._ops.ops", "load_all"],
         ["module", "brainevent._other.computed", "load_all"]]

# Runs the package's loads through bekc's loaders; prints, per load, whether
# it was a hit and from which cache.
LOADER = r"""
import json, sys
import bekc, bekc._compat as compat
real, seen = compat.run_bekc, []
def watching(argv, **kw):
    out = real(argv, **kw)
    if isinstance(out, dict) and "manifest" in out:
        seen.append({"manifest": out["manifest"], "cache_hit": out["cache_hit"],
                     "layer": out.get("layer")})
    return out
compat.run_bekc = watching
import importlib
for module, fn in json.loads(sys.argv[1]):
    getattr(importlib.import_module(module), fn)()
print(json.dumps(seen))
"""


@pytest.fixture
def site(tmp_path) -> Path:
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    return make_site(tmp_path, fake_package())


def run_loads(site: Path, env: dict, run=None):
    environ = dict(env)
    environ.update(PYTHONPATH=os.pathsep.join([str(site), str(REPO / "python")]),
                   JAX_PLATFORMS="cpu")
    argv = [sys.executable, "-c", LOADER, json.dumps([c[1:] for c in LOADS])]
    if run:
        return run(argv, environ)
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, env=environ)


def pack(bekc_path, *args, env):
    return subprocess.run([str(bekc_path), "pack", *map(str, args)], capture_output=True,
                          text=True, timeout=TIMEOUT_S, env=env)


def built_cache(bekc_path, tmp_path):
    """k.cpp built into tmp_path/c; (the source, the environment used)."""
    src = tmp_path / "k.cpp"
    src.write_text(add_value_cpp("add_one"))
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    subprocess.run([str(bekc_path), "build", src, "-O0", "--cache-dir", tmp_path / "c"],
                   check=True, capture_output=True, env=env)
    return src, env


def test_a_pack_of_a_package_and_its_recorded_loads_serves_them_with_no_compiler(
        bekc_path, site, hidden, tmp_path):
    env = without_venv(site.parent, BEKC=str(bekc_path))
    recording = tmp_path / "loads.jsonl"
    # A run records its loads: twin_1 is loaded under a name the package's
    # source computes, which the package prebuild cannot know.
    first = run_loads(site, dict(env, BEKC_RECORD=str(recording),
                                 BEKC_CACHE_DIR=str(tmp_path / "recorder")))
    assert first.returncode == 0, first.stderr
    out = tmp_path / "be_pack"
    made = pack(bekc_path, site / "brainevent", recording, "-o", out, "--arch", "sm_80",
                "--cache-dir", tmp_path / "builder", "--json", env=env)
    assert made.returncode == 0, made.stderr
    info = json.loads(made.stdout.strip().splitlines()[-1])["info"]
    assert info["name"] == "be_pack" and "twin_1" in info["modules"]
    assert {"fake_ops", "kern", "fake_deep"} <= set(info["modules"])
    assert json.loads((out / "bekc-cache.json").read_text())["pack"] == info
    # Entries and their portable records only.
    assert sorted(p.name for p in out.iterdir()) == [
        "CACHEDIR.TAG", "bekc-cache.json", "entries", "portable"]
    before = listing(out)
    r = run_loads(site, dict(env, BEKC_READ_ONLY_CACHES=str(out),
                             BEKC_CACHE_DIR=str(tmp_path / "user")), run=hidden)
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(seen) == 4 and all(s["cache_hit"] for s in seen), seen
    assert all(s["manifest"].startswith(str(out)) for s in seen), seen
    assert listing(out) == before, "a hit wrote into the pack"


def test_a_pack_of_a_cache_takes_every_build_in_it(bekc_path, hidden, tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(add_value_cpp("add_one"))
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    built = subprocess.run([str(bekc_path), "build", src, "-O0", "--cache-dir", tmp_path / "c",
                            "--json"], capture_output=True, text=True, env=env)
    assert built.returncode == 0, built.stderr
    key = json.loads(built.stdout)["key"]
    made = pack(bekc_path, tmp_path / "c", "-o", tmp_path / "p", env=env)
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "p" / "entries" / key[:2] / key[2:]).is_dir()
    r = hidden([bekc_path, "build", src, "-O0", "--read-only-caches", tmp_path / "p", "--json"],
               env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["layer"] == str(tmp_path / "p")


def test_a_changed_file_in_a_pack_is_never_served(bekc_path, hidden, tmp_path):
    src, env = built_cache(bekc_path, tmp_path)
    assert pack(bekc_path, tmp_path / "c", "-o", tmp_path / "p", env=env).returncode == 0
    for name in ("target.json", "libk.so"):
        (f,) = (tmp_path / "p" / "entries").glob(f"*/*/{name}")
        os.chmod(f, 0o644)
        f.write_bytes(f.read_bytes().replace(b"x86_64", b"x86_65") if name == "target.json"
                      else f.read_bytes() + b"\0")
        r = hidden([bekc_path, "build", src, "-O0", "--read-only-caches", tmp_path / "p"], env)
        assert r.returncode == 3, r.stderr
        assert "corrupt" in r.stderr and "no host C++ compiler found" in r.stderr


def test_bad_pack_arguments_are_errors(bekc_path, tmp_path):
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    (tmp_path / "exists").mkdir()
    r = pack(bekc_path, tmp_path, "-o", tmp_path / "exists", env=env)
    assert r.returncode == 2 and "exists already" in r.stderr
    r = pack(bekc_path, tmp_path / "nothing", "-o", tmp_path / "new", env=env)
    assert r.returncode == 2
    assert "not a package directory, a recording of loads or a bekc cache" in r.stderr
    r = pack(bekc_path, tmp_path, "-o", tmp_path / "new", "--name", "a-b", env=env)
    assert r.returncode == 2 and "--name 'a-b'" in r.stderr


def test_an_installed_pack_wheel_serves_the_python_loaders_with_no_compiler(bekc_path, hidden,
                                                                            tmp_path):
    """pip installs the wheel into an environment's site-packages; that
    environment's loads are then hits from it, with no set-up."""
    src = tmp_path / "k.cpp"
    src.write_text(add_value_cpp("add_seven", value="7.0f"))
    script = f"import bekc; print(bekc.load_cpp_file({str(src)!r}))\n"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    (site,) = venv.glob("lib/python3*/site-packages")
    import sysconfig
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "BEKC": str(bekc_path), "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([str(REPO / "python"),
                                          sysconfig.get_paths()["purelib"]])}
    built = subprocess.run([venv / "bin" / "python", "-c", script], capture_output=True,
                           text=True, env=dict(env, BEKC_CACHE_DIR=str(tmp_path / "c")))
    assert built.returncode == 0, built.stderr
    made = pack(bekc_path, tmp_path / "c", "-o", tmp_path / "dist", "--format", "wheel",
                "--name", "demo", "--version", "1.0", env=env)
    assert made.returncode == 0, made.stderr
    (wheel,) = (tmp_path / "dist").glob("bekc_pack_demo-1.0-py3-none-manylinux_*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", site, wheel], check=True)
    r = hidden([venv / "bin" / "python", "-c", script],
               dict(env, BEKC_CACHE_DIR=str(tmp_path / "user")))
    assert r.returncode == 0, r.stderr
    assert "Module" in r.stdout or "demo" in r.stdout or r.stdout.strip()
    assert not (tmp_path / "user" / "entries").exists()
    # And bekc cache packs lists it.
    listed = subprocess.run([str(bekc_path), "cache", "packs", "--python-site", site, "--json"],
                            capture_output=True, text=True, env=env)
    assert listed.returncode == 0, listed.stderr
    assert any((p.get("pack") or {}).get("name") == "demo" for p in json.loads(listed.stdout))


def test_a_pack_tarball_unpacks_to_a_pack(bekc_path, tmp_path):
    src, env = built_cache(bekc_path, tmp_path)
    made = pack(bekc_path, tmp_path / "c", "-o", tmp_path / "p.tar.gz", "--format", "tar",
                "--name", "demo", env=env)
    assert made.returncode == 0, made.stderr
    subprocess.run(["tar", "xzf", tmp_path / "p.tar.gz", "-C", tmp_path], check=True)
    r = subprocess.run([str(bekc_path), "build", src, "-O0", "--cache-dir", tmp_path / "own",
                        "--read-only-caches", tmp_path / "demo", "--json"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["layer"] == str(tmp_path / "demo"), r.stderr


def test_a_packs_default_name_comes_from_its_file_name(bekc_path, tmp_path):
    src, env = built_cache(bekc_path, tmp_path)
    made = pack(bekc_path, tmp_path / "c", "-o", tmp_path / "be-kernels-1.tar.gz", "--format",
                "tar", "--json", env=env)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout.strip().splitlines()[-1])["info"]["name"] == "be_kernels_1"


def test_a_pack_that_fails_leaves_nothing_beside_its_output(bekc_path, tmp_path):
    src, env = built_cache(bekc_path, tmp_path)
    # An entry holding a link: not copied (no link is followed), and the pack fails.
    (library,) = (tmp_path / "c" / "entries").glob("*/*/libk.so")
    library.unlink()
    library.symlink_to("/etc/hostname")
    r = pack(bekc_path, tmp_path / "c", "-o", tmp_path / "p", env=env)
    assert r.returncode != 0 and "not a regular file" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("p")) == []
