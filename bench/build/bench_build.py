#!/usr/bin/env python3
"""Benchmark of the build driver: `bekc build` against the compilers it wraps.

On bench/build/two_kernels.cu (two CUDA kernels with their `// @BE` entry points):

(a) cold build: `bekc build --force` (a cache miss) into a cache directory
    that has seen the toolchain once (an untimed build first: the runtime
    headers, the compilers' versions and bekc_rt.o, the handlers' support
    code, are made once per cache and compiler; that first build in an empty
    cache is timed and printed apart), next to
    - bare nvcc: `nvcc -shared -Xcompiler -fPIC` of the user source alone (the
      floor: no handlers at all), and
    - ffi.h: ffi_two_handlers.cu, one translation unit with the same kernels
      and two handlers written with XLA's own xla/ffi/api/ffi.h
      (XLA_FFI_DEFINE_HANDLER_SYMBOL), compiled by `nvcc -shared` (what
      brainevent's load_cuda_inline does).
    All three use the same -std, -O3, -gencode and host compiler.
    Goals: bekc <= 0.8x bare nvcc with 4 or more cores (nvcc's phases run
    side by side), <= 1.0x on fewer; and <= 0.2x the ffi.h build.
(b) warm hit: `bekc build` on the unchanged file next to a `ccache nvcc -c`
    hit on the same file (CCACHE_DIR in a temporary directory, warmed first).
    Goal: bekc <= 0.5x ccache.
(c) four .cu inputs (copies of the file with renamed functions): `-j2` against
    `-j1`, each forced (--force) in a cache that has seen the toolchain.
    Goal: >= 1.8x.

Every figure is the median of several runs (wall clock of the whole process,
interleaved so that drift in the machine's load hits all variants alike).

Usage:
    .venv/bin/python bench/build/bench_build.py [--bekc build/bekc] [--arch sm_90]
        [--cold-reps 5] [--hit-reps 40] [--jobs-reps 3] [--json FILE]
XLA's headers come from `jax.ffi.include_dir()` of the running Python (or
--xla-include); they are never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SOURCE = HERE / "two_kernels.cu"
FFI_SOURCE = HERE / "ffi_two_handlers.cu"
RUNTIME_INCLUDE = REPO / "runtime" / "include"


def run(argv, env=None, cwd=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(map(str, argv))}\n"
                 f"{proc.stdout}\n{proc.stderr}")
    return proc


def timed(argv, env=None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = run(argv, env=env)
    return time.perf_counter() - t0, proc


def median(xs):
    return statistics.median(xs)


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def xla_include(explicit: str | None) -> str:
    if explicit:
        return explicit
    try:
        import jax.ffi  # noqa: PLC0415

        return jax.ffi.include_dir()
    except Exception as exc:  # pragma: no cover - depends on the environment
        sys.exit(f"cannot find XLA's headers (pip install jax, or pass --xla-include): {exc}")


def gencode(arch: str) -> list[str]:
    n = re.fullmatch(r"sm_(\d+[af]?)", arch)
    if not n:
        sys.exit(f"--arch takes one sm_XX here, not {arch!r}")
    v = n.group(1)
    return ["-gencode", f"arch=compute_{v},code=sm_{v}", "-gencode",
            f"arch=compute_{v},code=compute_{v}"]


def four_inputs(directory: Path) -> None:
    """Four copies of the benchmark file with distinct symbols."""
    text = SOURCE.read_text()
    for i in range(4):
        body = re.sub(r"\b(saxpy|relu)", rf"\g<1>{i}", text)
        (directory / f"part{i}.cu").write_text(body)


def cores() -> int:
    """The CPUs this process may run on (taskset counts)."""
    return len(os.sched_getaffinity(0))


def cold_goal() -> float:
    return 0.8 if cores() >= 4 else 1.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bekc", default=os.environ.get("BEKC_BINARY", str(REPO / "build" / "bekc")))
    ap.add_argument("--nvcc", default=None, help="default: the nvcc bekc picks")
    ap.add_argument("--ccache", default=shutil.which("ccache"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--xla-include", default=None)
    ap.add_argument("--cold-reps", type=int, default=5)
    ap.add_argument("--hit-reps", type=int, default=40)
    ap.add_argument("--jobs-reps", type=int, default=3)
    ap.add_argument("--baseline-bekc", default=None,
                    help="an earlier bekc binary: its cold builds and hits are timed "
                         "beside this one's (goal: within 5%%)")
    ap.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
    args = ap.parse_args()

    bekc = Path(args.bekc).resolve()
    inc = xla_include(args.xla_include)
    work = Path(tempfile.mkdtemp(prefix="bekc-bench-build-"))
    env = dict(os.environ)
    env.pop("BEKC_CACHE_DIR", None)
    counter = iter(range(10**6))

    def fresh_cache() -> Path:
        return work / f"cache{next(counter)}"

    def bekc_build(*extra, cache: Path, binary: Path | None = None):
        argv = [binary or bekc, "build", *extra, "--arch", args.arch, "--cache-dir", cache, "--json", "-q"]
        if args.nvcc:
            argv += ["--nvcc", args.nvcc]
        seconds, proc = timed(argv, env=env)
        return seconds, json.loads(proc.stdout.strip().splitlines()[-1])

    # The toolchain bekc picks; the baselines use the same nvcc and host compiler.
    _, first = bekc_build(SOURCE, cache=fresh_cache())
    manifest = json.loads(Path(first["manifest"]).read_text())
    nvcc = args.nvcc or manifest["toolchain"]["nvcc"]["path"]
    cxx = manifest["toolchain"]["cxx"]["path"]
    common = ["-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-ccbin", cxx,
              *gencode(args.arch)]
    bare_argv = [nvcc, *common, f"-I{RUNTIME_INCLUDE}", SOURCE, "-o", work / "bare.so"]
    ffi_argv = [nvcc, *common, "-w", f"-I{inc}", FFI_SOURCE, "-o", work / "ffi.so"]
    load_before = os.getloadavg()

    old = Path(args.baseline_bekc).resolve() if args.baseline_bekc else None

    # (a) cold builds, interleaved.
    cold = {"bekc": [], "bekc_compile": [], "bare": [], "ffi": [], "bekc_empty_cache": [],
            "baseline_bekc": []}
    run(bare_argv)  # warm the file system cache for every tool once
    run(ffi_argv)
    for _ in range(args.cold_reps):
        cache = fresh_cache()
        s, info = bekc_build(SOURCE, cache=cache)  # the first build in an empty cache
        cold["bekc_empty_cache"].append(s)
        s, info = bekc_build(SOURCE, "--force", cache=cache)
        assert info["cache_hit"] is False
        cold["bekc"].append(s)
        cold["bekc_compile"].append(info["timings"]["compile_s"])
        cold["bare"].append(timed(bare_argv)[0])
        cold["ffi"].append(timed(ffi_argv)[0])
        if old:
            old_cold = fresh_cache()
            bekc_build(SOURCE, cache=old_cold, binary=old)
            s, info = bekc_build(SOURCE, "--force", cache=old_cold, binary=old)
            assert info["cache_hit"] is False
            cold["baseline_bekc"].append(s)

    # (b) warm hits.
    hit_cache = fresh_cache()
    bekc_build(SOURCE, cache=hit_cache)
    hits = {"bekc": [], "ccache": [], "baseline_bekc": []}
    if old:
        old_cache = fresh_cache()
        bekc_build(SOURCE, cache=old_cache, binary=old)
        bekc_build(SOURCE, cache=old_cache, binary=old)
    ccache_note = "ccache not found"
    ccache_argv = None
    if args.ccache:
        cenv = dict(env, CCACHE_DIR=str(work / "ccache"), CCACHE_TEMPDIR=str(work / "ccache-tmp"))
        cenv.pop("CCACHE_DISABLE", None)
        ccache_argv = [args.ccache, nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-ccbin", cxx,
                       *gencode(args.arch), f"-I{RUNTIME_INCLUDE}", "-c", SOURCE, "-o",
                       work / "ccache.o"]
        run(ccache_argv, env=cenv)  # miss
        run(ccache_argv, env=cenv)  # first hit
        run([args.ccache, "--zero-stats"], env=cenv)
    for _ in range(args.hit_reps):
        s, info = bekc_build(SOURCE, cache=hit_cache)
        assert info["cache_hit"] is True
        hits["bekc"].append(s)
        if old:
            s, info = bekc_build(SOURCE, cache=old_cache, binary=old)
            assert info["cache_hit"] is True
            hits["baseline_bekc"].append(s)
        if ccache_argv:
            hits["ccache"].append(timed(ccache_argv, env=cenv)[0])
    if ccache_argv:
        stats = run([args.ccache, "--print-stats"], env=cenv).stdout
        counts = dict(line.split("\t") for line in stats.splitlines() if "\t" in line)
        ccache_note = (f"{counts.get('direct_cache_hit', '?')} direct + "
                       f"{counts.get('preprocessed_cache_hit', '?')} preprocessed hits, "
                       f"{counts.get('cache_miss', '?')} misses")

    # (c) four inputs, -j2 against -j1, interleaved.
    four = work / "four"
    four.mkdir()
    four_inputs(four)
    jobs = {"j1": [], "j2": []}
    jobs_cache = fresh_cache()
    bekc_build(SOURCE, cache=jobs_cache)  # the toolchain's one-time work, untimed
    for _ in range(args.jobs_reps):
        for j in ("j1", "j2"):
            s, info = bekc_build(four, "--name", "four", f"-{j}", "--force",
                                 cache=jobs_cache)
            assert info["cache_hit"] is False and len(info["targets"]) == 8
            jobs[j].append(s)
    load_after = os.getloadavg()

    m = {k: median(v) for k, v in cold.items() if v}
    h = {k: median(v) for k, v in hits.items() if v}
    jm = {k: median(v) for k, v in jobs.items()}
    rows = [
        ("(a) cold build vs bare nvcc", m["bekc"], "bare nvcc", m["bare"],
         m["bekc"] / m["bare"], f"<= {cold_goal():.2f}x", m["bekc"] / m["bare"] <= cold_goal()),
        ("(a) cold build vs ffi.h TU", m["bekc"], "nvcc + ffi.h", m["ffi"],
         m["bekc"] / m["ffi"], "<= 0.20x", m["bekc"] / m["ffi"] <= 0.2),
    ]
    if "baseline_bekc" in m:
        rows.append(("(a) cold build vs earlier bekc", m["bekc"], "--baseline-bekc",
                     m["baseline_bekc"], m["bekc"] / m["baseline_bekc"], "<= 1.05x",
                     m["bekc"] / m["baseline_bekc"] <= 1.05))
    if "ccache" in h:
        rows.append(("(b) warm hit vs ccache hit", h["bekc"], "ccache nvcc -c", h["ccache"],
                     h["bekc"] / h["ccache"], "<= 0.50x", h["bekc"] / h["ccache"] <= 0.5))
    else:
        rows.append(("(b) warm hit", h["bekc"], "ccache: n/a", float("nan"), float("nan"),
                     "<= 0.50x", False))
    if "baseline_bekc" in h:
        rows.append(("(b) warm hit vs earlier bekc", h["bekc"], "--baseline-bekc",
                     h["baseline_bekc"], h["bekc"] / h["baseline_bekc"], "<= 1.05x",
                     h["bekc"] / h["baseline_bekc"] <= 1.05))
    rows.append(("(c) 4 inputs: -j2 vs -j1", jm["j2"], "bekc -j1", jm["j1"],
                 jm["j1"] / jm["j2"], ">= 1.80x (speedup)", jm["j1"] / jm["j2"] >= 1.8))

    nvcc_version = run([nvcc, "--version"]).stdout.strip().splitlines()[-1]
    cxx_version = run([cxx, "--version"]).stdout.splitlines()[0]
    print(f"machine: {platform.node()}, {cores()} CPUs, load average "
          f"{load_before[0]:.2f} before / {load_after[0]:.2f} after")
    print(f"nvcc: {nvcc} ({nvcc_version}); host: {cxx} ({cxx_version}); --arch {args.arch}")
    print(f"medians of {args.cold_reps} cold, {args.hit_reps} hit and {args.jobs_reps} -j runs; "
          f"ccache: {ccache_note}")
    print()
    header = f"{'case':<30} {'bekc':>10}   {'baseline':<16} {'':>10} {'ratio':>7}  {'goal':<19} met"
    print(header)
    print("-" * len(header))
    for name, mine, base_name, base, ratio, goal, met in rows:
        print(f"{name:<30} {fmt_s(mine):>10}   {base_name:<16} {fmt_s(base):>10} "
              f"{ratio:>6.2f}x  {goal:<19} {'yes' if met else 'NO'}")
    print()
    print(f"cold bekc build: {fmt_s(m['bekc_compile'])} in the compiler, "
          f"{fmt_s(m['bekc'] - m['bekc_compile'])} in bekc itself (scan, keys, "
          f"`--version` of the tools, publish, process start)")
    print(f"first build in an empty cache (also writes the runtime headers, asks the tools' "
          f"versions and compiles bekc_rt.o): {fmt_s(m['bekc_empty_cache'])}")
    print(f"cost above bare nvcc: bekc {fmt_s(m['bekc'] - m['bare'])}, the ffi.h TU "
          f"{fmt_s(m['ffi'] - m['bare'])}; bare nvcc alone is {m['bare'] / m['ffi']:.2f}x "
          f"the ffi.h TU, the floor of the ffi.h ratio")

    if args.json_out:
        Path(args.json_out).write_text(json.dumps({
            "cold": cold, "hits": hits, "jobs": jobs, "ccache": ccache_note,
            "nvcc": nvcc_version, "cxx": cxx_version, "cpus": cores(),
            "load": [load_before, load_after],
            "rows": [{"case": r[0], "bekc_s": r[1], "baseline": r[2], "baseline_s": r[3],
                      "ratio": r[4], "goal": r[5], "met": r[6]} for r in rows],
        }, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
