#!/usr/bin/env python3
"""What bekc's generated wrappers add to a build.

For each kernel file: `bekc build` on a cache miss (a fresh cache directory
per run, so every run compiles) against the same file compiled alone into a
shared library by the bare compiler, with the flags bekc uses itself:

  .cpp: g++  -std=c++17 -O3 -fPIC -fvisibility=hidden -I runtime/include -shared F -o lib.so
  .cu:  nvcc -std=c++17 -O3 -Xcompiler -fPIC,-fvisibility=hidden
             -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
             -I runtime/include -shared F -o lib.so

Each bekc build is forced (--force) into one cache directory that an
untimed first build has filled with what bekc compiles once per cache and
host compiler: the runtime headers and bekc_rt.o, the handlers' support
code (its compile time is printed apart). The bare library has no handlers. "wrapper TU" is bekc's own timing of its
compiler process (the generated translation unit: user source + handlers);
"bekc build" is the whole `bekc build` process (adds scan, hashing, the
compilers' identity, cache publish). Runs are interleaved; the fastest run
of each is (best of N; medians in --json). Goal: wrappers add < 10%.

    .venv/bin/python bench/overhead/bench_compile.py [--runs 9] [--cuda-runs 5] [--no-cuda]
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

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNTIME_INCLUDE = os.path.join(REPO, "runtime", "include")

CPU_FILES = [os.path.join(HERE, "trivial_bekc.cpp"),
             os.path.join(REPO, "tests", "harness", "kernels", "handlers_cpu.cpp")]
CUDA_FILES = [os.path.join(HERE, "trivial_bekc.cu"),
              os.path.join(REPO, "tests", "harness", "kernels", "handlers_cuda.cu")]


def timed(argv):
    """Wall seconds of the process, and its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr}{proc.stdout}")
    return dt, proc.stdout


def count_exports(source: str) -> int:
    with open(source) as f:
        return sum(1 for line in f if line.lstrip().startswith("// @BE "))


def bench_file(source, bekc, bare_cmd, runs, extra) -> dict:
    bare, wrapped, compile_only = [], [], []
    with tempfile.TemporaryDirectory(prefix="bekc-bench-compile-") as tmp:
        # One untimed build first: it writes the runtime headers and compiles
        # bekc_rt.o, which happen once per cache and compiler (timed apart).
        cache = os.path.join(tmp, "cache")
        timed([bekc, "build", source, "--cache-dir", cache, "-q", *extra])
        for i in range(runs):
            bare.append(timed(bare_cmd(source, os.path.join(tmp, f"bare{i}.so")))[0])
            dt, out = timed([bekc, "build", source, "--cache-dir", cache, "--force",
                             "--json", "-q", *extra])
            wrapped.append(dt)
            # bekc's own figure for its compiler process(es): the wrapper TU alone.
            compile_only.append(json.loads(out)["timings"]["compile_s"])
    # The fastest run of each: compile times on a shared machine only ever get
    # slower than the work needs (medians are kept in the JSON too).
    b, w, c = (min(v) for v in (bare, wrapped, compile_only))
    return {"file": os.path.relpath(source, REPO), "exports": count_exports(source), "bare_s": b,
            "bekc_s": w, "wrapper_compile_s": c, "overhead_pct": 100.0 * (w - b) / b,
            "compile_overhead_pct": 100.0 * (c - b) / b, "runs": runs,
            "median": {"bare_s": statistics.median(bare), "bekc_s": statistics.median(wrapped),
                       "wrapper_compile_s": statistics.median(compile_only)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--cuda-runs", type=int, default=5)
    ap.add_argument("--no-cuda", action="store_true")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--json")
    args = ap.parse_args()
    bekc = os.environ.get("BEKC_BINARY") or os.path.join(REPO, "build", "bekc")

    def cxx_cmd(src, out):
        return [args.cxx, "-std=c++17", "-O3", "-fPIC", "-fvisibility=hidden", "-I", RUNTIME_INCLUDE,
                "-shared", src, "-o", out]

    def nvcc_cmd(src, out):
        return [args.nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC,-fvisibility=hidden",
                "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90",
                "-I", RUNTIME_INCLUDE, "-shared", src, "-o", out]

    rows = [bench_file(f, bekc, cxx_cmd, args.runs, ["--cxx", shutil.which(args.cxx) or args.cxx])
            for f in CPU_FILES]
    if not args.no_cuda and os.access(args.nvcc, os.X_OK):
        rows += [bench_file(f, bekc, nvcc_cmd, args.cuda_runs, ["--arch", "sm_90", "--nvcc", args.nvcc])
                 for f in CUDA_FILES]
    # The once-per-cache-and-compiler part: the handler support object.
    with tempfile.TemporaryDirectory(prefix="bekc-bench-rt-") as tmp:
        rt = min(timed([args.cxx, "-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-I",
                        RUNTIME_INCLUDE, "-c", os.path.join(RUNTIME_INCLUDE, "bekc", "handler_rt.cpp"),
                        "-o", os.path.join(tmp, f"rt{i}.o")])[0] for i in range(3))
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.1f}; fastest of the interleaved runs")
    print(f"{'file':<40} {'exports':>7} {'bare':>7} {'wrapper TU':>10} {'added':>7} "
          f"{'bekc build':>10} {'added':>7}")
    for r in rows:
        print(f"{r['file']:<40} {r['exports']:>7} {r['bare_s']:>6.2f}s {r['wrapper_compile_s']:>9.2f}s "
              f"{r['compile_overhead_pct']:>6.1f}% {r['bekc_s']:>9.2f}s {r['overhead_pct']:>6.1f}%")
    print(f"once per cache and host compiler: bekc_rt.o (bekc/handler_rt.cpp) {rt:.2f}s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
