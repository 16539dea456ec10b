"""--launcher / $BEKC_LAUNCHER: a compiler cache in front of the compilers."""
import os
import shutil
import subprocess

import pytest


KERNEL = r"""
#include "brainevent/common.h"
// @BE twice
void twice(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2 * x.data_ptr<float>()[i];
}
"""


@pytest.fixture
def bekc(bekc_path):
    def run(*args, env=None):
        return subprocess.run([str(bekc_path), *map(str, args)], capture_output=True, text=True,
                              env=env)
    return run


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed")
def test_ccache_launcher_runs_every_compile(bekc, tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(KERNEL)
    env = dict(os.environ, CCACHE_DIR=str(tmp_path / "ccache"), CCACHE_NOHASHDIR="1")
    dry = bekc("build", src, "--cache-dir", tmp_path / "c", "--launcher", "ccache", "--dry-run",
               env=env)
    assert dry.returncode == 0, dry.stderr
    # Every compile has the launcher in front, bekc's runtime object's too;
    # the link does not (ccache and sccache do not cache links).
    runs = [l for l in dry.stdout.splitlines() if not l.startswith("#")]
    compiles = [l for l in runs if " -c " in l]
    assert len(compiles) == 3 and any("handler_rt.cpp" in l for l in compiles), dry.stdout
    assert any("bekc_handlers.cpp" in l for l in compiles), dry.stdout
    assert all(l.split()[0].endswith("ccache") for l in compiles), dry.stdout
    assert all(not l.split()[0].endswith("ccache") for l in runs if " -c " not in l), dry.stdout
    # Each build compiles in a new directory (docs/cache.md, "Where builds
    # compile"), so every compile reaches ccache and is compiled: ccache
    # runs the compilers, and bekc's own cache serves a repeated build.
    for _ in range(2):
        r = bekc("build", src, "--cache-dir", tmp_path / "c", "--launcher", "ccache", "--force",
                 env=env)
        assert r.returncode == 0, r.stderr
    stats = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, env=env)
    counts = {k: int(v) for k, v in (line.split("\t") for line in stats.stdout.splitlines()
                                      if "\t" in line and line.split("\t")[1].isdigit())}
    assert counts.get("cache_miss", 0) + counts.get("direct_cache_hit", 0) + \
        counts.get("preprocessed_cache_hit", 0) >= 4, stats.stdout


def test_env_launcher_and_missing_launcher(bekc, tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(KERNEL)
    env = dict(os.environ, BEKC_LAUNCHER="/no/such/launcher")
    r = bekc("build", src, "--cache-dir", tmp_path / "c", env=env)
    assert r.returncode == 3
    assert "$BEKC_LAUNCHER names '/no/such/launcher'" in r.stderr


@pytest.mark.skipif(shutil.which("sccache") is None, reason="sccache is not installed")
def test_sccache_launcher_builds(bekc, tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(KERNEL)
    env = dict(os.environ, SCCACHE_DIR=str(tmp_path / "sccache"), SCCACHE_IDLE_TIMEOUT="30")
    try:
        # sccache's client gives the server it starts 10 s; on a loaded machine that can
        # pass before bekc is involved ("Timed out waiting for server startup"). The server
        # is started here first, and asked again until it answers.
        for _ in range(3):
            if subprocess.run(["sccache", "--show-stats"], capture_output=True,
                              env=env).returncode == 0:
                break
            subprocess.run(["sccache", "--start-server"], capture_output=True, env=env)
        for _ in range(2):
            r = bekc("build", src, "--cache-dir", tmp_path / "c", "--launcher", "sccache",
                     "--force", env=env)
            assert r.returncode == 0, r.stderr
        stats = subprocess.run(["sccache", "--show-stats"], capture_output=True, text=True, env=env)
        hit_lines = [l for l in stats.stdout.splitlines() if l.startswith("Cache hits")]
        assert hit_lines and int(hit_lines[0].split()[-1]) >= 1, stats.stdout
    finally:
        subprocess.run(["sccache", "--stop-server"], capture_output=True, env=env)
