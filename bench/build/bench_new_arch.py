#!/usr/bin/env python3
"""A new architecture: the build of a module for one more architecture,
against a full rebuild, in one run.

For one kernel file (default: brainevent's _dense/binary_densemv.cu, with its
include directory), each repetition times, interleaved:
  (a) new arch:  a cache holding the build for --before (default
      sm_80,sm_90), then `bekc build --arch <--after>` (default
      sm_80,sm_90,sm_100): only the new architecture's device code compiles,
      the rest comes from the step cache;
  (b) full:      the same build in a cache that has only the toolchain's
      memos and bekc's runtime (a cache miss, every step compiled);
  (c) one nvcc:  (b) with BEKC_SPLIT_NVCC=0, one nvcc process per input as
      bekc compiled before nvcc's phases were steps.
Goal: (a) <= 0.5x (b). Also printed: (b) against (c), and how many steps (a)
took from the cache. -j is every core unless --jobs.

Usage:
    python bench/build/bench_new_arch.py [--bekc build/bekc] [--source FILE -I DIR]
        [--before sm_80,sm_90] [--after sm_80,sm_90,sm_100] [--reps 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TINY = '#include "brainevent/common.h"\n// @BE tiny\nvoid tiny(const BE::Tensor x, BE::Tensor y) {}\n'


def default_source():
    spec = importlib.util.find_spec("brainevent")
    if not spec or not spec.origin:
        sys.exit("brainevent is not importable: pass --source FILE [-I DIR]")
    package = Path(spec.origin).parent
    return package / "_dense" / "binary_densemv.cu", [package / "include"]


def bekc(binary, *args, env=None):
    t0 = time.perf_counter()
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"bekc {' '.join(map(str, args))} failed:\n{proc.stderr[-4000:]}")
    return seconds, proc


def fresh_cache(binary, root: Path, name: str, tiny: Path) -> Path:
    """A cache with the toolchain's memos and bekc's runtime, nothing else."""
    cache = root / name
    shutil.rmtree(cache, ignore_errors=True)
    bekc(binary, "build", tiny, "--cache-dir", cache, "-q")
    return cache


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bekc", default=os.environ.get("BEKC_BINARY", str(REPO / "build" / "bekc")))
    ap.add_argument("--source", default=None)
    ap.add_argument("-I", dest="includes", action="append", default=None)
    ap.add_argument("--before", default="sm_80,sm_90")
    ap.add_argument("--after", default="sm_80,sm_90,sm_100")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--json", dest="json_out", default=None)
    a = ap.parse_args()
    if a.source:
        source, includes = Path(a.source), [Path(i) for i in a.includes or []]
    else:
        source, includes = default_source()
    flags = [x for inc in includes for x in ("-I", inc)]
    if a.jobs:
        flags += ["-j", str(a.jobs)]
    times = {"new arch": [], "full": [], "one nvcc": []}
    reused = []
    with tempfile.TemporaryDirectory(prefix="bekc-new-arch-") as tmp:
        root = Path(tmp)
        tiny = root / "tiny.cpp"
        tiny.write_text(TINY)
        for rep in range(a.reps):
            cache = fresh_cache(a.bekc, root, "a", tiny)
            bekc(a.bekc, "build", source, *flags, "--arch", a.before, "--cache-dir", cache, "-q")
            s, proc = bekc(a.bekc, "build", source, *flags, "--arch", a.after, "--cache-dir", cache,
                           "-v")
            times["new arch"].append(s)
            reused.append(sum(line.startswith("# reused: ") for line in proc.stderr.splitlines()))
            cache = fresh_cache(a.bekc, root, "b", tiny)
            s, _ = bekc(a.bekc, "build", source, *flags, "--arch", a.after, "--cache-dir", cache, "-q")
            times["full"].append(s)
            cache = fresh_cache(a.bekc, root, "c", tiny)
            s, _ = bekc(a.bekc, "build", source, *flags, "--arch", a.after, "--cache-dir", cache, "-q",
                        env={"BEKC_SPLIT_NVCC": "0"})
            times["one nvcc"].append(s)
            print(f"rep {rep + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()),
                  flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{source.name}: {a.before} -> {a.after}, {len(os.sched_getaffinity(0))} cores "
          f"({platform.node()}), median of {a.reps}")
    print(f"{'':28}{'seconds':>9}")
    for k in times:
        print(f"{k:28}{med[k]:9.2f}")
    print(f"new arch / full rebuild      {med['new arch'] / med['full']:.2f}x   (goal <= 0.5x)")
    print(f"full (phases) / one nvcc     {med['full'] / med['one nvcc']:.2f}x")
    print(f"steps reused by the new-arch build: {statistics.median(reused):.0f}")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"median_s": med, "runs_s": times, "reused": reused,
                                                "cores": len(os.sched_getaffinity(0)), "source": str(source),
                                                "before": a.before, "after": a.after}, indent=2))


if __name__ == "__main__":
    main()
