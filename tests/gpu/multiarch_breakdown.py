#!/usr/bin/env python3
"""Where a multi-architecture miss spends its time, on this machine.

For each file: `bekc build --force` with a launcher that stamps each
compile's start and end, so the build splits into bekc before the compiles,
the nvcc compile, the wave of compiles (nvcc beside the entry points'), and
what follows it (the link, then bekc's own work); the same with bekc's
`--threads N` replaced by 0; and bare nvcc `--threads 0` on the user's file. Then one `nvcc --time` of bekc's
command and of the bare one, phase by phase (summed over architectures).

    PYTHON tests/gpu/multiarch_breakdown.py --bekc .carry/bekc [--reps 3] [--arch LIST]
        [--files _dense/binary_densemv.cu] [--no-threads0] [--no-phases]

Besides the medians it prints each bekc build's time over the bare compile
of the same round (each round runs bare, bekc, then bekc with --threads 0),
as a median and quartiles of those paired ratios: on a shared VM whose speed
drifts by 10% between minutes, the steadier figure.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

FILES = ["_dense/binary_densemv.cu", "_fcn/binary_fcnmm.cu"]

LAUNCHER = """#!/bin/bash
# Stamps the compile's start and end; THREADS, when set, replaces nvcc's --threads N.
s=$EPOCHREALTIME
args=()
prev=""
for a in "$@"; do
  if [ "$prev" = "--threads" ] && [ -n "${THREADS:-}" ]; then a=$THREADS; fi
  case "$a" in *.bekc.cu) cp "$a" "$STAMPS.wrapper.cu";; esac
  args+=("$a"); prev=$a
done
"${args[@]}"
rc=$?
e=$EPOCHREALTIME
echo "${args[0]##*/} $s $e" >> "$STAMPS"
exit $rc
"""


def run(argv, env=None):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(map(str, argv))}\n{proc.stderr[-3000:]}")
    return proc


def phases(csv_path):
    out = defaultdict(float)
    with open(csv_path) as f:
        for row in list(csv.reader(f))[1:]:
            if len(row) > 6:
                out[row[1].strip()] += float(row[6]) / 1000
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bekc", required=True)
    ap.add_argument("--arch", default="sm_80,sm_90,sm_100")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--files", default=",".join(FILES),
                    help="brainevent kernel files, relative to the package")
    ap.add_argument("--no-threads0", action="store_true",
                    help="skip the build with bekc's --threads N replaced by 0")
    ap.add_argument("--no-phases", action="store_true", help="skip the nvcc --time phases")
    args = ap.parse_args()
    spec = importlib.util.find_spec("brainevent")
    if spec is None:
        sys.exit("brainevent is not importable")
    pkg = Path(spec.origin).parent
    include = pkg / "include"
    work = Path(tempfile.mkdtemp(prefix="bekc-breakdown-"))
    launcher = work / "launch.sh"
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    stamps = work / "stamps"
    cache = work / "cache"
    env = dict(os.environ, STAMPS=str(stamps))
    env.pop("MAKEFLAGS", None)
    archs = args.arch.split(",")

    def bekc(src, threads=None, *more):
        e = dict(env)
        if threads is not None:
            e["THREADS"] = str(threads)
        stamps.unlink(missing_ok=True)
        t0 = time.time()
        run([args.bekc, "build", src, "--arch", args.arch, "-I", include, "--cache-dir", cache,
             "--force", "-q", "--json", "--launcher", launcher, *more], e)
        t1 = time.time()
        runs = [line.split() for line in stamps.read_text().splitlines()]
        starts = [float(r[1]) for r in runs]
        ends = [float(r[2]) for r in runs]
        nv = next(r for r in runs if r[0] == "nvcc")
        return {"total": t1 - t0, "pre": min(starts) - t0,
                "nvcc": float(nv[2]) - float(nv[1]), "wave": max(ends) - min(starts),
                "after": t1 - max(ends)}

    first = json.loads(run([args.bekc, "build", pkg / FILES[0], "--arch", args.arch, "-I",
                            include, "--cache-dir", cache, "-q", "--json"], env).stdout)
    manifest = json.loads(Path(first["manifest"]).read_text())
    nvcc, cxx = manifest["toolchain"]["nvcc"]["path"], manifest["toolchain"]["cxx"]["path"]
    print(f"{os.cpu_count()} CPUs; nvcc {nvcc}; host {cxx}; --arch {args.arch}; "
          f"medians of {args.reps}")
    gen = []
    for a in archs:
        v = a.removeprefix("sm_")
        gen += ["-gencode", f"arch=compute_{v},code=sm_{v}"]
    v = archs[-1].removeprefix("sm_")
    gen += ["-gencode", f"arch=compute_{v},code=compute_{v}"]
    for rel in args.files.split(","):
        src = pkg / rel
        bare = [nvcc, "-std=c++17", "-O3", "-ccbin", cxx, "-Xcompiler",
                "-fPIC,-fvisibility=hidden", *gen, f"-I{include}", "-shared", src,
                "-o", work / "bare.so", "--threads", "0"]
        rows = defaultdict(list)
        for _ in range(args.reps):
            t0 = time.time()
            run(bare)
            rows["bare nvcc --threads 0"].append({"total": time.time() - t0})
            rows["bekc"].append(bekc(src))
            if not args.no_threads0:
                rows["bekc, nvcc --threads 0"].append(bekc(src, 0))
        print(f"\n{rel}")
        for name, rs in rows.items():
            med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            print(f"  {name:<26} " + "  ".join(f"{k} {v:6.3f}s" for k, v in med.items()))
        # Each bekc build against the bare compile of its round: the pair
        # shares the machine's state of the moment, so their ratio is steadier
        # than the ratio of two medians.
        bare_t = [r["total"] for r in rows["bare nvcc --threads 0"]]
        for name, rs in rows.items():
            if name.startswith("bare") or len(rs) < 2:
                continue
            ratios = sorted(r["total"] / b for r, b in zip(rs, bare_t))
            q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [ratios[0], 0, ratios[-1]]
            print(f"  {name + ' / bare, paired':<26} median {statistics.median(ratios):.3f}x  "
                  f"quartiles {q[0]:.3f}-{q[2]:.3f}  range {ratios[0]:.3f}-{ratios[-1]:.3f}  "
                  f"(n={len(ratios)})")
        if args.no_phases:
            continue
        bekc(src, None, f"--cuda-flag=--time={work / 'bekc.csv'}")
        run(bare + ["--time", work / "bare.csv"])
        pb, pk = phases(work / "bare.csv"), phases(work / "bekc.csv")
        print(f"  {'nvcc --time phase (sum)':<28} {'bare':>8} {'bekc':>8}")
        for name in sorted(set(pb) | set(pk), key=lambda n: -pk.get(n, 0)):
            print(f"  {name:<28} {pb.get(name, 0):8.3f} {pk.get(name, 0):8.3f}")


if __name__ == "__main__":
    main()
