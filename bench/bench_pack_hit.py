#!/usr/bin/env python3
"""Hits from a pack against hits from the own cache (docs/packs.md).

Issue 40: "Hits from a pack are as fast as local ones." One CUDA file with two
kernels (bench/build/two_kernels.cu), built once for sm_80,sm_90 into a cache,
which `bekc pack` then copies into a pack. Timed, interleaved, ``--reps``
times each:

* ``bekc build FILE --arch sm_80,sm_90 --json`` in a new process: a hit from
  the own cache (the direct key), and a hit from the pack named with
  ``--read-only-caches`` and an empty own cache (the toolchain is here, so
  the direct key misses in the pack, which holds no direct records, and the
  portable key finds the entry);
* the same with nvcc and every host compiler hidden (a private mount
  namespace, as root; skipped elsewhere): the portable key alone;
* in a new Python process, ``bekc.load_cuda_file(FILE, compute_capability=...)``
  answered by the in-process lookup library (``libbekc_lookup.so``): the load
  call only, from the own cache and from the pack.

Prints medians side by side, pack over own cache. No GPU is needed.

    .venv/bin/python bench/bench_pack_hit.py --bekc build/bekc --reps 15
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "bench" / "build" / "two_kernels.cu"
HIDE = REPO / "tests" / "integration" / "hide_system_cuda.py"
ARCH = "sm_80,sm_90"

LOAD = r"""
import sys, time, jax, bekc
jax.devices()
t0 = time.perf_counter()
bekc.load_cuda_file(sys.argv[1], compute_capability=sys.argv[2])
print((time.perf_counter() - t0) * 1000)
"""


# Times ARGV... REPS times in this process (inside the mount namespace, whose
# set-up is not the hit's): one line of JSON, the milliseconds of each run.
REPEAT = r"""
import json, subprocess, sys, time
reps, argv = int(sys.argv[1]), sys.argv[2:]
out = []
for _ in range(reps):
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True)
    out.append((time.perf_counter() - t0) * 1000)
    if r.returncode != 0 or not json.loads(r.stdout.strip().splitlines()[-1])["cache_hit"]:
        sys.exit(r.stderr)
print(json.dumps(out))
"""


def timed(argv, env) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    ms = (time.perf_counter() - t0) * 1000
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, argv))}\n{r.stderr}")
    out = json.loads(r.stdout.strip().splitlines()[-1]) if "--json" in argv else None
    if out is not None and not out["cache_hit"]:
        sys.exit(f"not a hit: {argv}")
    return ms


def can_hide() -> bool:
    return subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                           str(HIDE), "--compilers", "true"], capture_output=True).returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bekc", default=str(REPO / "build" / "bekc"))
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    bekc = str(Path(args.bekc).resolve())
    work = Path(tempfile.mkdtemp(prefix="bekc-pack-bench-"))
    try:
        src = work / "two_kernels.cu"
        shutil.copy(SOURCE, src)
        env = dict(os.environ, HOME=str(work / "home"), BEKC=bekc,
                   PYTHONPATH=str(REPO / "python"), JAX_PLATFORMS="cpu")
        env.pop("BEKC_READ_ONLY_CACHES", None)
        own, user, pack = work / "own", work / "user", work / "pack"
        build = [bekc, "build", str(src), "--arch", ARCH, "--json"]
        subprocess.run(build + ["--cache-dir", str(own)], env=env, check=True,
                       capture_output=True)
        subprocess.run([bekc, "pack", str(own), "-o", str(pack)], env=env, check=True,
                       capture_output=True)
        # The Python loader's own build of the file, for its hits.
        py_env = dict(env, BEKC_CACHE_DIR=str(own))
        py = [sys.executable, "-c", LOAD, str(src), "sm_90"]
        subprocess.run(py, env=py_env, check=True, capture_output=True)
        subprocess.run([bekc, "pack", str(own), "-o", str(work / "pypack")], env=env,
                       check=True, capture_output=True)
        hidden = ["unshare", "-m", "--propagation", "private", sys.executable, str(HIDE),
                  "--compilers"] if can_hide() else None
        cases = {
            "CLI, own cache": (build + ["--cache-dir", str(own)], env, False),
            "CLI, pack": (build + ["--cache-dir", str(user), "--read-only-caches", str(pack)],
                          env, False),
        }
        hidden_times = []
        # With the toolkit hidden, the CUDA runtime the library links is pip's.
        runtime = [f"--python-site={s}" for s in (REPO / ".venv-toolkit").glob(
            "lib/python3*/site-packages")]
        if hidden:
            r = subprocess.run(hidden + [sys.executable, "-c", REPEAT, str(args.reps)] + build +
                               ["--cache-dir", str(user), "--read-only-caches", str(pack)] +
                               runtime,
                               env=env, capture_output=True, text=True, check=True)
            hidden_times = json.loads(r.stdout.strip().splitlines()[-1])
        cases["load call, own cache"] = (py, py_env, True)
        cases["load call, pack"] = (py, dict(env, BEKC_CACHE_DIR=str(user),
                                             BEKC_READ_ONLY_CACHES=str(work / "pypack")), True)
        times = {name: [] for name in cases}
        for _ in range(args.reps):
            for name, (argv, e, inner) in cases.items():
                if inner:
                    r = subprocess.run(argv, env=e, capture_output=True, text=True, check=True)
                    times[name].append(float(r.stdout.strip().splitlines()[-1]))
                else:
                    times[name].append(timed(argv, e))
        if hidden_times:
            times["CLI, pack, no compiler"] = hidden_times
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{'case':28} {'median ms':>10}   ratio")
        for name, ms in med.items():
            base = med["CLI, own cache"] if name.startswith("CLI") else med["load call, own cache"]
            print(f"{name:28} {ms:10.2f}   {ms / base:.2f}x")
        if not hidden:
            print("(no compiler hidden: unshare -m as root is not allowed here)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
