"""The cache under concurrent builds and killed builds (SPEC §5): many
processes building one key produce one entry and all succeed; a build killed
with SIGKILL at any moment leaves nothing that blocks or corrupts later
builds."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path


FAST = "-O0"


def session_members(sid: int):
    """Pids of live processes in session `sid` (the compilers a killed bekc
    left running: they were started by this test, through bekc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid:  # field 6 of stat: session id
            pids.append(int(entry.name))
    return pids


def kill_session(sid: int) -> None:
    for pid in session_members(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def spawn(argv, env=None):
    """bekc in its own session, so the compilers it starts can be found."""
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)


def test_eight_processes_building_one_key_at_once(bekc, kernels, tmp_path):
    """All eight also place their outputs in one -o directory."""
    src = kernels.cpp(bekc.workdir / "k.cpp")
    out_dir = tmp_path / "out"
    argv = bekc.build_argv(src, FAST, "-o", out_dir)
    procs = [spawn(argv) for _ in range(8)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    manifests = {r["manifest"] for r in results}
    assert manifests == {str(out_dir / "manifest.json")}, manifests
    assert sum(not r["cache_hit"] for r in results) == 1, "one process compiles, the rest wait"
    assert len(bekc.entries()) == 1
    ls = bekc.cache("ls")
    assert ls.returncode == 0
    assert "1 entry (" in ls.stdout, ls.stdout
    assert "PROBLEM" not in ls.stdout
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert hashlib.sha256((out_dir / "libk.so").read_bytes()).hexdigest() == manifest["library_sha256"]
    # (Hidden leftovers are test_build_outputs.py's business.)
    assert sorted(p.name for p in out_dir.iterdir() if not p.name.startswith(".")) == [
        "libk.so", "manifest.json"]
    verify = bekc.cache("verify")
    assert verify.returncode == 0 and " 0 removed" in verify.stdout, verify.stdout
    assert manifest["targets"][0]["name"] == "k.add_one"


def test_a_killed_builder_does_not_block_a_waiting_one(bekc, kernels):
    """B waits for A's lock; A is killed; B must build promptly, not wait out
    a timeout."""
    src = kernels.cpp(bekc.workdir / "k.cpp", extra="#include <map>\n#include <regex>\n")
    argv = bekc.build_argv(src, "-O2")
    a = spawn(argv)
    time.sleep(0.4)
    b = spawn(argv)
    time.sleep(0.4)
    start = time.monotonic()
    a.kill()
    a.wait()
    kill_session(a.pid)
    out, err = b.communicate(timeout=120)
    took = time.monotonic() - start
    assert b.returncode == 0, err
    assert took < 60, f"the waiter needed {took:.1f}s after the holder died"
    info = json.loads(out.strip().splitlines()[-1])
    assert Path(info["manifest"]).is_file()
    assert bekc.cache("verify").returncode == 0


def test_builds_killed_at_random_moments(bekc, kernels, tmp_path):
    seed = int(os.environ.get("BEKC_TEST_SEED", time.time_ns() % 100000))
    rng = random.Random(seed)
    src = bekc.workdir / "k.cpp"
    # How long one build takes here, in a scratch cache.
    kernels.cpp(src, value="0.0f")
    t0 = time.monotonic()
    bekc.build(src, FAST, cache_dir=tmp_path / "scratch")
    full = time.monotonic() - t0

    delays = []
    for i in range(6):
        # A new key each time, so every victim is a real miss that compiles
        # and publishes (or would have).
        kernels.cpp(src, value=f"{i + 1}.0f")
        p = spawn(bekc.build_argv(src, FAST))
        delay = rng.uniform(0.0, full * 1.1)
        delays.append(round(delay, 3))
        time.sleep(delay)
        p.kill()
        p.communicate()
        kill_session(p.pid)
    context = f"seed {seed} (set BEKC_TEST_SEED to repeat), delays {delays}, build {full:.2f}s"

    # Every key the victims worked on builds normally and promptly now.
    for i in range(6):
        kernels.cpp(src, value=f"{i + 1}.0f")
        t0 = time.monotonic()
        r = bekc.build(src, FAST, timeout=120)
        assert time.monotonic() - t0 < full * 3 + 20, context
        assert r.manifest["library_sha256"], context
    verify = bekc.cache("verify")
    assert verify.returncode == 0, f"{context}\n{verify.stdout}{verify.stderr}"
    assert " 0 removed" in verify.stdout, f"{context}\n{verify.stdout}"
    ls = bekc.cache("ls")
    assert "PROBLEM" not in ls.stdout, f"{context}\n{ls.stdout}"
    assert "6 entries" in ls.stdout, f"{context}\n{ls.stdout}"
    # And they are hits now.
    for i in range(6):
        kernels.cpp(src, value=f"{i + 1}.0f")
        assert bekc.build(src, FAST).hit is True, context
