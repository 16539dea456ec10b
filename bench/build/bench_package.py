#!/usr/bin/env python3
"""A package's cold build: bekc against an earlier bekc, and against the
package's work bound.

`bekc build <package> -j <cores> --force` over a copy of brainevent's package
that keeps its --files largest kernel files (all with --files 0), with the
binary under test and with --old (an earlier build of bekc, e.g. one whose
modules took fixed shares of -j instead of sharing its slots through a
jobserver). The runs alternate, each side first in every other pair, each
with its own cache directory, which has seen the toolchain (a first, untimed
build fills it).

Printed, as medians: wall time of each, the ratio new/old, the CPU seconds of
the compiles, and the work bound (CPU seconds / cores): no schedule on that
many cores ends sooner. With --critical K, also the K largest files each
built alone with -j <cores> by the binary under test: the package cannot end
before the longest of them.

Usage:
    python bench/build/bench_package.py --bekc build/bekc --old OLD_BEKC
        [--package DIR] [--files 4] [--arch sm_80,sm_90,sm_100] [--reps 2] [--jobs N]
        [--critical K]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def package_dir(explicit):
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("brainevent")
    if spec is None:
        sys.exit("brainevent is not importable: install it, or pass --package DIR")
    return Path(spec.origin).parent


def xla_flags():
    """XLA's FFI headers, named the way bekc's Python loaders name them."""
    try:
        import jax.ffi  # noqa: PLC0415
        return ["--xla-include", jax.ffi.include_dir()]
    except Exception:  # pragma: no cover - depends on the environment
        print("jax is not importable: kernel files that include XLA's headers will fail")
        return []


def build(bekc, package, cache, args, jobs, xla, extra=()):
    """(wall seconds, CPU seconds of bekc and everything it ran)."""
    argv = [str(bekc), "build", str(package), *xla, "--arch", args.arch, "-j", str(jobs),
            "--force", "--cache-dir", str(cache), "-q", "--json", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # 1: some module failed, which both sides report
        sys.exit(f"{bekc} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bekc", default="build/bekc")
    ap.add_argument("--old", required=True, help="the earlier bekc binary")
    ap.add_argument("--package", default=None, help="brainevent's package dir (default: installed)")
    ap.add_argument("--files", type=int, default=4, help="largest kernel files kept (0: all)")
    ap.add_argument("--arch", default="sm_80,sm_90,sm_100")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--critical", type=int, default=0,
                    help="the largest files built alone, for the critical path")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bekc-bench-package-"))
    package = work / "package"
    shutil.copytree(package_dir(args.package), package,
                    ignore=shutil.ignore_patterns("*_test.py", "__pycache__"))
    kernels = sorted(package.rglob("*.cu"), key=lambda p: -p.stat().st_size)
    if args.files:
        for p in kernels[args.files:]:
            p.unlink()
        kernels = kernels[:args.files]
    xla = xla_flags()
    sides = {"bekc": Path(args.bekc).resolve(), "old": Path(args.old).resolve()}
    caches = {name: work / f"{name}-cache" for name in sides}
    for name, binary in sides.items():  # the toolchain's probes and bekc_rt.o, untimed
        build(binary, package, caches[name], args, args.jobs, xla)
    times = {name: [] for name in sides}
    cpu = {name: [] for name in sides}
    for rep in range(args.reps):
        order = list(sides) if rep % 2 == 0 else list(reversed(sides))
        for name in order:
            wall, seconds = build(sides[name], package, caches[name], args, args.jobs, xla)
            times[name].append(wall)
            cpu[name].append(seconds)
    alone = []
    for p in kernels[:args.critical]:
        name = "_".join(p.relative_to(package).with_suffix("").parts)
        alone.append(build(sides["bekc"], p, caches["bekc"], args, args.jobs, xla,
                           ("-I", str(package / "include"), "--name", name))[0])
    shutil.rmtree(work, ignore_errors=True)

    print(f"package: {len(kernels)} kernel files, --arch {args.arch}, -j {args.jobs} "
          f"on {os.cpu_count()} CPUs; medians of {args.reps}, order alternated")
    header = f"{'':<8} {'wall':>8} {'CPU':>8} {'work bound':>11}  runs"
    print(header)
    print("-" * len(header))
    for name in sides:
        m, c = statistics.median(times[name]), statistics.median(cpu[name])
        runs = " ".join(f"{t:.1f}" for t in times[name])
        print(f"{name:<8} {m:7.2f}s {c:7.1f}s {c / args.jobs:10.2f}s  {runs}")
    ratio = statistics.median(times["bekc"]) / statistics.median(times["old"])
    print(f"bekc / old: {ratio:.2f}x")
    if alone:
        crit = max(alone)
        print(f"critical path (the longest of the {len(alone)} largest files alone): {crit:.2f}s; "
              f"bekc / critical path: {statistics.median(times['bekc']) / crit:.2f}x")


if __name__ == "__main__":
    main()
