#!/usr/bin/env python3
"""Multi-architecture builds: bekc against bare nvcc, in one run.

(a) One brainevent kernel file for three architectures plus PTX (--arch,
    default sm_80,sm_90,sm_100), or a file of one's own (--source, with
    bekc's runtime headers), built by bekc (-j = every core) in the three
    ways a build compiles everything:
    - first build: in an empty cache (a new --cache-dir each time: the
      runtime headers and bekc_rt.o are made too, timings.json is empty),
      and of a new copy of the file in a cache that has seen the toolchain;
    - edit: the file edited (a __device__ function appended: every phase
      compiles again), rebuilt in that cache;
    - --force: the file that cache has just built, built again;
    next to
    - bare nvcc with serial gencodes (nvcc's default), and
    - bare nvcc `--threads 0` (every architecture at once),
    both with bekc's flags for the user's file (-std, -O3, -ccbin,
    -Xcompiler -fPIC,-fvisibility=hidden, -shared, the same -I).
    Goals (first build, edit, --force alike): bekc <= 0.9x `nvcc --threads 0`
    with 4 or more cores, <= 1.0x on fewer.
    With --baseline-bekc, an earlier bekc is timed beside it, and the host
    compiler's share (nvcc --time, "c++ (compiling)") of bekc's command and
    of the bare one is printed: where bekc's extra cost was.
(b) A package directory: `bekc build <package> -j <cores> --force` over the
    --package-files largest kernel files of brainevent 0.2.1 (all 45 with
    --package-files 0), next to the critical path: the longest single
    compile, `bekc build FILE --force` of each of the --critical largest
    files alone (which gives it every core as nvcc threads).
    Goal: the package <= 1.1x the critical path.

Every figure is the median of --reps runs, interleaved.

Usage:
    .venv/bin/python bench/build/bench_multiarch.py [--bekc build/bekc]
        [--arch sm_80,sm_90,sm_100] [--reps 2] [--package-files 12]
        [--baseline-bekc OLD] [--json FILE]
    .venv/bin/python bench/build/bench_multiarch.py --no-package --files '' \
        --source bench/build/two_kernels.cu --arch sm_90 --reps 5
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = ["_fcn/binary_fcnmm.cu", "_dense/binary_densemv.cu"]


def run(argv, env=None):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(map(str, argv))}\n"
                 f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv, env=None):
    t0, c0 = time.perf_counter(), children_cpu()
    proc = run(argv, env)
    timed.cpu = children_cpu() - c0
    return time.perf_counter() - t0, proc


def package_dir(explicit):
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("brainevent")
    if spec is None:
        sys.exit("brainevent 0.2.1 is not installed: pip install brainevent==0.2.1 --no-deps, "
                 "or pass --package DIR")
    return Path(spec.origin).parent


def gencodes(archs):
    out = []
    for a in archs:
        v = a.removeprefix("sm_")
        out += ["-gencode", f"arch=compute_{v},code=sm_{v}"]
    v = archs[-1].removeprefix("sm_")
    return out + ["-gencode", f"arch=compute_{v},code=compute_{v}"]


def host_compile_seconds(csv_path):
    """The host compile's seconds by nvcc --time; None where bekc ran nvcc's
    phases itself (no nvcc process to write the table)."""
    if not Path(csv_path).exists():
        return None
    with open(csv_path) as f:
        rows = list(csv.reader(f))
    return sum(float(r[6]) for r in rows[1:] if len(r) > 6 and "compiling" in r[1]) / 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bekc", default=os.environ.get("BEKC_BINARY", str(REPO / "build" / "bekc")))
    ap.add_argument("--baseline-bekc", default=None)
    ap.add_argument("--package", default=None, help="brainevent's package dir (default: installed)")
    ap.add_argument("--arch", default="sm_80,sm_90,sm_100")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--package-files", type=int, default=12,
                    help="the N largest kernel files (0: all)")
    ap.add_argument("--files", default=",".join(FILES),
                    help="the kernel files of (a), relative to the package ('' for none)")
    ap.add_argument("--source", action="append", default=[],
                    help="a kernel file of (a) outside the package, compiled with bekc's "
                         "runtime headers (repeatable)")
    ap.add_argument("--no-package", action="store_true", help="leave out (b)")
    ap.add_argument("--critical", type=int, default=3,
                    help="time the N largest files alone for the critical path")
    ap.add_argument("--json", dest="json_out", default=None)
    ap.add_argument("--trace-dir", default=None,
                    help="each bekc build of (a) also writes --trace FILE here, named "
                         "<file>-<case>-<rep>.json (bench/trace_summary.py reads them)")
    args = ap.parse_args()

    bekc = Path(args.bekc).resolve()
    old = Path(args.baseline_bekc).resolve() if args.baseline_bekc else None
    files = [f for f in args.files.split(",") if f]
    pkg = package_dir(args.package) if files or not args.no_package else None
    include = pkg / "include" if pkg else None
    archs = args.arch.split(",")
    cores = len(os.sched_getaffinity(0))
    work = Path(tempfile.mkdtemp(prefix="bekc-bench-multiarch-"))
    env = dict(os.environ)
    env.pop("BEKC_CACHE_DIR", None)
    env.pop("MAKEFLAGS", None)

    def bekc_build(binary, cache, *more, include_dir=None):
        extra = ["-I", include_dir] if include_dir else []
        return timed([binary, "build", *more, "--arch", args.arch, *extra,
                      "--cache-dir", cache, "-q", "--json"], env)

    # (a)'s files, copied into the work directory so that they can be edited:
    # (label, the copy, the -I bare nvcc gets, the -I bekc gets).
    sources = []
    for n, rel in enumerate(files + args.source):
        original = pkg / rel if n < len(files) else Path(rel).resolve()
        copy = work / f"a{n}" / original.name
        copy.parent.mkdir()
        shutil.copyfile(original, copy)
        if n < len(files):
            sources.append((rel, copy, include, include))
        else:
            sources.append((original.name, copy, REPO / "runtime" / "include", None))
    if not sources:
        sys.exit("no kernel file for (a): --files or --source")

    # The toolchain bekc picks, for the bare commands; the cache that has seen it.
    warm = work / "cache"
    _, first = bekc_build(bekc, warm, sources[0][1], include_dir=sources[0][3])
    manifest = json.loads(Path(json.loads(first.stdout)["manifest"]).read_text())
    nvcc, cxx = manifest["toolchain"]["nvcc"]["path"], manifest["toolchain"]["cxx"]["path"]
    if old:
        bekc_build(old, work / "old-cache", sources[0][1], include_dir=sources[0][3])
    caches = iter(range(10**6))

    rows, figures = [], {}
    goal = 0.9 if len(os.sched_getaffinity(0)) >= 4 else 1.0
    for label, src, bare_include, bekc_include in sources:
        bare = [nvcc, "-std=c++17", "-O3", "-ccbin", cxx, "-Xcompiler",
                "-fPIC,-fvisibility=hidden", *gencodes(archs), f"-I{bare_include}", "-shared",
                src, "-o", work / "bare.so"]
        kinds = ("first, empty cache", "first, new file", "edit", "--force")
        t = {"serial": [], "threads0": [], "old first": [], "old --force": [],
             **{k: [] for k in kinds}}
        cpu = {k: [] for k in t}

        def add(kind, seconds):
            t[kind].append(seconds)
            cpu[kind].append(timed.cpu)

        def traced(kind, rep):
            """--trace FILE for this case's build, with --trace-dir."""
            if not args.trace_dir:
                return []
            name = f"{src.stem}-{kind.replace(',', '').replace(' ', '-')}-{rep}.json"
            return ["--trace", str(Path(args.trace_dir).resolve() / name)]

        bekc_build(bekc, warm, src, include_dir=bekc_include)  # the file this cache has seen
        if old:
            bekc_build(old, work / "old-cache", src, include_dir=bekc_include)
        for rep in range(args.reps):
            add("serial", timed(bare)[0])
            add("threads0", timed(bare + ["--threads", "0"])[0])
            empty = work / f"empty{next(caches)}"
            add("first, empty cache", bekc_build(bekc, empty, src, *traced("first, empty cache", rep),
                                                 include_dir=bekc_include)[0])
            shutil.rmtree(empty, ignore_errors=True)
            new = src.with_name(f"{src.stem}_new{rep}{src.suffix}")
            shutil.copyfile(src, new)
            add("first, new file", bekc_build(bekc, warm, new, *traced("first, new file", rep),
                                              include_dir=bekc_include)[0])
            with open(src, "a") as f:  # new code: every phase compiles again
                f.write(f"\n__device__ int bekc_bench_edit_{rep}() {{ return {rep}; }}\n")
            add("edit", bekc_build(bekc, warm, src, *traced("edit", rep),
                                   include_dir=bekc_include)[0])
            add("--force", bekc_build(bekc, warm, src, "--force", *traced("force", rep),
                                      include_dir=bekc_include)[0])
            if old:
                empty = work / f"empty{next(caches)}"
                add("old first", bekc_build(old, empty, src, include_dir=bekc_include)[0])
                shutil.rmtree(empty, ignore_errors=True)
                add("old --force", bekc_build(old, work / "old-cache", src, "--force",
                                              include_dir=bekc_include)[0])
        m = {k: statistics.median(v) for k, v in t.items() if v}
        figures[label] = m
        figures[label]["cpu"] = {k: statistics.median(v) for k, v in cpu.items() if v}
        for kind in kinds:
            rows.append((f"(a) {label}: {kind}", m[kind], "nvcc --threads 0", m["threads0"],
                         m[kind] / m["threads0"], f"<= {goal:.2f}x",
                         m[kind] <= goal * m["threads0"]))
            rows.append((f"(a) {label}: {kind}", m[kind], "nvcc serial", m["serial"],
                         m[kind] / m["serial"], "", None))
        if old:
            for kind, theirs in (("first, empty cache", "old first"), ("--force", "old --force")):
                rows.append((f"(a) {label}: {kind}", m[kind], "--baseline-bekc", m[theirs],
                             m[kind] / m[theirs], "", None))
            # Where the earlier bekc's extra cost was: the host compiler's share.
            run(bare + ["--time", work / "bare.csv"])
            bekc_build(bekc, warm, src, "--force", f"--cuda-flag=--time={work / 'new.csv'}",
                       include_dir=bekc_include)
            bekc_build(old, work / "old-cache", src, "--force",
                       f"--cuda-flag=--time={work / 'old.csv'}", include_dir=bekc_include)
            figures[label]["host_compile"] = {
                k: host_compile_seconds(work / f"{k}.csv") for k in ("bare", "new", "old")}

    if not args.no_package:
        # (b) A package directory against its critical path.
        trimmed = work / "package"
        shutil.copytree(pkg, trimmed, ignore=shutil.ignore_patterns("*_test.py", "__pycache__"))
        kernels = sorted((p for p in trimmed.rglob("*.cu")), key=lambda p: -p.stat().st_size)
        if args.package_files:
            for p in kernels[args.package_files:]:
                p.unlink()
            kernels = kernels[:args.package_files]
        # The hybrid CSR kernels include brainevent/dtypes.h, which needs XLA's
        # FFI headers: named the way bekc's Python loaders name them.
        xla = []
        try:
            import jax.ffi  # noqa: PLC0415
            xla = ["--xla-include", jax.ffi.include_dir()]
        except Exception:  # pragma: no cover - depends on the environment
            print("jax is not importable: kernel files that include XLA's headers will fail")
        pkg_times, pkg_cpu, critical = [], [], []
        for _ in range(args.reps):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            s, _ = timed([bekc, "build", trimmed, *xla, "--arch", args.arch, "-j", str(cores),
                          "--force", "--cache-dir", warm, "-q", "--json"], env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            pkg_times.append(s)
            pkg_cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        for p in kernels[:args.critical]:
            critical.append(
                min(bekc_build(bekc, warm, p, "--force", *xla)[0] for _ in range(args.reps)))
        crit = max(critical)
        pm = statistics.median(pkg_times)
        # No schedule on `cores` cores beats the work spread evenly over them:
        # the package's lower bound is the larger of the critical path and
        # (CPU seconds of every compile) / cores.
        work = statistics.median(pkg_cpu)
        bound = max(crit, work / cores)
        rows.append((f"(b) {len(kernels)} files, -j {cores}", pm, "longest single", crit, pm / crit,
                     "<= 1.10x", pm / crit <= 1.10))
        rows.append((f"(b) {len(kernels)} files, -j {cores}", pm, "max(crit, work/N)", bound,
                     pm / bound, "", None))
        figures["package"] = {"files": len(kernels), "seconds": pm, "critical_path": crit,
                              "cpu_seconds": work, "work_bound": work / cores}

    print(f"machine: {platform.node()}, {cores} CPUs; nvcc {nvcc}; host {cxx}; --arch {args.arch}")
    print(f"medians of {args.reps} runs each")
    if "package" in figures:
        p = figures["package"]
        print(f"package: {p['cpu_seconds']:.1f} CPU seconds of compiles over {cores} cores = "
              f"{p['work_bound']:.2f} s at best; longest single compile {p['critical_path']:.2f} s")
    print()
    header = f"{'case':<48} {'bekc':>8}   {'baseline':<18} {'':>8} {'ratio':>7}  {'goal':<9} met"
    print(header)
    print("-" * len(header))
    for case, b, name, base, ratio, goal, met in rows:
        shown = "" if met is None else ("yes" if met else "NO")
        print(f"{case:<48} {b:7.2f}s   {name:<18} {base:7.2f}s {ratio:6.2f}x  {goal:<9} {shown}")
    print("\nCPU seconds (user + system, the processes each run started; medians):")
    for rel in (s[0] for s in sources):
        print(f"  {rel}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures[rel]["cpu"].items()))
    for rel in (s[0] for s in sources):
        hc = figures[rel].get("host_compile")
        if hc:
            shown = {k: "n/a" if v is None else f"{v:.2f} s" for k, v in hc.items()}
            print(f"\nhost compile of {rel} (nvcc --time, 'c++ (compiling)'): bare "
                  f"{shown['bare']}, bekc {shown['new']}, --baseline-bekc {shown['old']}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
