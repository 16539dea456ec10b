#!/usr/bin/env python3
"""A whole brainevent process start: bekc's prebuilt cache against brainevent's warm cache.

Issue 30, goal 1: "Measure a whole brainevent process start as well: import,
then the first call of 10 different ops with a prebuilt cache, against
brainevent's pipeline with its cache warm."

Each measured process is new and does, in this order, each phase timed:

1. import: ``import jax, brainevent``; on bekc's side also ``import bekc`` and
   ``bekc.use_for_brainevent()`` (which imports the brainevent modules that
   name a loader, so it is part of bekc's cost); printed whole and in its
   three parts (jax, brainevent, bekc);
2. backend: ``jax.devices()`` (JAX's CPU or CUDA backend comes up);
3. first calls: the first call of each of the 10 ops below, one after the
   other. Each loads a different kernel module of brainevent's through
   ``load_cuda_file`` (its ``cuda_raw`` backend): a cache hit on both sides.

What "first call" is depends on the machine (``--mode``, default ``auto``):

* ``run`` (a GPU is present): the op called on device arrays and waited for
  (``jax.block_until_ready``): trace, lowering (which loads and registers the
  module), XLA's compile and the kernel's run.
* ``lower`` (no GPU, e.g. the 2-core VM): ``jax.jit(op).trace(...).lower(
  lowering_platforms=("cuda",))``: trace and the CUDA lowering, which is where
  brainevent loads the module and registers its targets; no XLA compile and
  no kernel run. Each lowered module is checked to call the module's targets.

The ops (brainevent 0.2.1's public names; module each loads):
binary_densemv (dense_binary_mv), binary_densemm (dense_binary_mm),
csrmv (csr_float_csrmv), csrmm (csr_float_csrmm), binary_fcnmv
(fcn_binary_mv), binary_fcnmm (fcn_binary_mm), binary_jitsmv
(jit_scalar_binary_jitsmv), jitsmv (jit_scalar_jitsmv), jitumv
(jit_uniform_jitumv), jitnmv (jit_normal_jitnmv); the same module names in
0.3.0. The CSR ops get one shared weight (brainevent sends per-entry weights
to jaxlib's cuSPARSE instead), and binary_fcnmv is the transposed product (the
other direction has no CUDA kernel). An op that fails in the first process of
either side is reported and left out of both.

"of which in the loaders" is the time spent inside brainevent's loader
functions (bekc's, once patched) during the first calls: the child wraps every
reference a brainevent module holds to ``load_cuda_file``/``_inline``/``_dir``
after the imports; it is the part of a first call that the cache serves.

The caches: each side's is filled first by one untimed process that makes the
same calls on an empty cache (its time, the cold start, is printed too), or
kept across runs with ``--cache-root DIR``. With ``--prebuild`` bekc's cache
is filled instead by ``bekc build <brainevent package> -j N``, every kernel
file of the package, as a deployment would.

Then ``--reps`` processes per side, interleaved, each side first in every other
pair (bekc, brainevent, brainevent, bekc, ...);
medians of each phase, of the whole process (wall clock, seen from this
script, including Python's start and exit) and bekc's time over
brainevent's.

Needs: brainevent (0.2.1 tested) and JAX in this Python, nvcc for the cold
runs (``--nvcc-home``, default $CUDA_HOME or /usr/local/cuda), the bekc binary
(``--bekc``, default build/bekc, else the package's own lookup). Both sides
compile for ``--arch`` (default sm_90, given to both as
$BRAINEVENT_COMPUTE_CAPABILITIES; ``--arch auto`` leaves it unset, so that
each detects the GPU).

    .venv/bin/python bench/bench_brainevent_start.py [--reps 9] [--mode auto]
        [--cache-root DIR] [--prebuild] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _child import child_env, fmt, locate_bekc, machine_line, median, ratio, run_child

SIDES = ("bekc", "brainevent")

# name -> (module it loads, the call's Python text over the inputs below).
OPS = {
    "binary_densemv": ("dense_binary_mv", "be.binary_densemv(W, spk_k, transpose=False)"),
    "binary_densemm": ("dense_binary_mm", "be.binary_densemm(W, spk_kb, transpose=False)"),
    "csrmv": ("csr_float_csrmv", "be.csrmv(w1, indices, indptr, v_k, shape=SHAPE)"),
    "csrmm": ("csr_float_csrmm", "be.csrmm(w1, indices, indptr, B_k, shape=SHAPE)"),
    "binary_fcnmv": ("fcn_binary_mv",
                     "be.binary_fcnmv(fw, fidx, spk_m, shape=SHAPE, transpose=True)"),
    "binary_fcnmm": ("fcn_binary_mm",
                     "be.binary_fcnmm(fw, fidx, spk_kb, shape=SHAPE, transpose=False)"),
    "binary_jitsmv": ("jit_scalar_binary_jitsmv",
                      "be.binary_jitsmv(1.5, 0.1, spk_k, 123, shape=SHAPE)"),
    "jitsmv": ("jit_scalar_jitsmv", "be.jitsmv(1.5, 0.1, v_k, 123, shape=SHAPE)"),
    "jitumv": ("jit_uniform_jitumv", "be.jitumv(0.1, 1.0, 0.1, v_k, 123, shape=SHAPE)"),
    "jitnmv": ("jit_normal_jitnmv", "be.jitnmv(0.0, 1.0, 0.1, v_k, 123, shape=SHAPE)"),
}

CHILD = textwrap.dedent(r"""
    import json, sys, time
    side, mode, ops = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    phases = {}
    t = time.perf_counter()
    import jax
    phases["import jax"] = time.perf_counter() - t
    import brainevent as be
    phases["import brainevent"] = time.perf_counter() - t - phases["import jax"]
    if side == "bekc":
        import bekc
        bekc.use_for_brainevent()
    phases["import"] = time.perf_counter() - t
    t = time.perf_counter()
    jax.devices()
    phases["backend"] = time.perf_counter() - t
    if mode == "auto":
        mode = "run" if jax.default_backend() == "gpu" else "lower"

    # Time spent inside brainevent's loaders (bekc's, once patched): every
    # reference a brainevent module holds is wrapped; nested calls count once.
    loader_s, loader_calls, depth = [0.0], [0], [0]
    def timed(fn):
        def wrapper(*a, **k):
            depth[0] += 1
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    loader_s[0] += time.perf_counter() - t
                    loader_calls[0] += 1
        return wrapper
    wrappers = {}
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == "brainevent" or mod_name.startswith("brainevent.")):
            continue
        for attr in ("load_cuda_file", "load_cuda_inline", "load_cuda_dir"):
            fn = vars(mod).get(attr)
            if callable(fn):
                setattr(mod, attr, wrappers.setdefault(id(fn), timed(fn)))

    import numpy as np
    rng = np.random.default_rng(0)
    M, K, NB, NCONN = 512, 256, 16, 32
    SHAPE = (M, K)
    indptr_np = np.arange(0, M * NCONN + 1, NCONN, dtype=np.int32)
    inputs = dict(
        be=be, SHAPE=SHAPE,
        W=rng.standard_normal((M, K)).astype(np.float32),
        spk_k=rng.random(K) < 0.2, spk_m=rng.random(M) < 0.2, spk_kb=rng.random((K, NB)) < 0.2,
        v_k=rng.standard_normal(K).astype(np.float32),
        B_k=rng.standard_normal((K, NB)).astype(np.float32),
        w1=np.array([0.5], np.float32),
        indices=rng.integers(0, K, M * NCONN, dtype=np.int32), indptr=indptr_np,
        fw=rng.standard_normal((M, NCONN)).astype(np.float32),
        fidx=rng.integers(0, K, (M, NCONN), dtype=np.int32),
    )
    arrays = [k for k, v in inputs.items() if isinstance(v, np.ndarray)]
    for k in arrays:                         # on the device, untimed
        inputs[k] = jax.device_put(inputs[k])
    jax.block_until_ready([inputs[k] for k in arrays])

    calls, errors, checked = {}, {}, {}
    for name, (module, text) in ops.items():
        fn = eval("lambda " + ", ".join(arrays) + ": " + text, dict(inputs))
        args = [inputs[k] for k in arrays]
        t = time.perf_counter()
        try:
            if mode == "run":
                jax.block_until_ready(fn(*args))
            else:
                lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
        except Exception as e:  # reported; the parent leaves the op out
            errors[name] = f"{type(e).__name__}: {str(e)[:300]}"
            continue
        calls[name] = time.perf_counter() - t
        if mode == "lower":
            checked[name] = (module + ".") in lowered.as_text()
    phases["first_calls"] = sum(calls.values())
    phases["loaders"] = loader_s[0]
    print(json.dumps({"mode": mode, "phases": phases, "calls": calls, "errors": errors,
                      "checked": checked, "version": be.__version__,
                      "loader_calls": loader_calls[0]}))
""")


def brainevent_package(env: dict) -> Path | None:
    """The brainevent package directory the children import, or None."""
    probe = ("import importlib.util, os; s = importlib.util.find_spec('brainevent'); "
             "print(os.path.dirname(s.origin) if s and s.origin else '')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env).stdout
    return Path(out.strip()) if out.strip() else None


class Side:
    """One side's processes: bekc (brainevent's loaders patched) or brainevent."""

    def __init__(self, name: str, args, cache: Path):
        self.name, self.args, self.cache = name, args, cache

    def env(self) -> dict:
        env = child_env(self.args.nvcc_home, self.args.bekc,
                        BRAINEVENT_CACHE_DIR=str(self.cache / "brainevent"),
                        BEKC_CACHE_DIR=str(self.cache / "bekc"))
        if self.args.arch != "auto":
            env["BRAINEVENT_COMPUTE_CAPABILITIES"] = self.args.arch
        else:
            env.pop("BRAINEVENT_COMPUTE_CAPABILITIES", None)
        return env

    def run(self, ops: dict) -> dict:
        return run_child(CHILD, [self.name, self.args.mode, json.dumps(ops)], self.env(),
                         self.name)

    def bekc_entries(self) -> int:
        return sum(1 for _ in (self.cache / "bekc" / "entries").glob("*/*"))


def prebuild(args, side: Side) -> float:
    package = brainevent_package(side.env())
    bekc = args.bekc or shutil.which("bekc")
    if package is None or bekc is None:
        sys.exit("--prebuild needs brainevent installed and a bekc binary (--bekc)")
    argv = [bekc, "build", str(package), "-j", str(args.jobs), "--cache-dir",
            str(side.cache / "bekc"), "--json", "-q"]
    if args.arch != "auto":
        argv += ["--arch", args.arch]
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=side.env())
    seconds = time.perf_counter() - t
    if proc.returncode not in (0, 1):  # 1: some modules failed, the rest are built
        sys.exit(f"bekc build {package} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return seconds


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bekc", default=os.environ.get("BEKC_BINARY"),
                    help="the bekc binary (default: build/bekc, else the package's lookup)")
    ap.add_argument("--reps", type=int, default=9, help="measured processes per side")
    ap.add_argument("--mode", choices=["auto", "run", "lower"], default="auto",
                    help="run: call the ops on the GPU; lower: trace and lower for CUDA only; "
                         "auto: run where JAX has a GPU")
    ap.add_argument("--arch", default="sm_90",
                    help="what both sides compile for ($BRAINEVENT_COMPUTE_CAPABILITIES); "
                         "auto: detect the GPU")
    ap.add_argument("--ops", default=",".join(OPS), help="a comma-separated subset of the ops")
    ap.add_argument("--cache-root", default=None,
                    help="keep both caches here (reused when present; default: a temporary "
                         "directory, removed afterwards)")
    ap.add_argument("--prebuild", action="store_true",
                    help="fill bekc's cache with `bekc build <brainevent package>`")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--nvcc-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
    args = ap.parse_args()
    args.bekc = locate_bekc(args.bekc)
    unknown = [o for o in args.ops.split(",") if o not in OPS]
    if unknown:
        ap.error(f"unknown ops {unknown}; choose from {', '.join(OPS)}")
    return args


def fill_caches(args, sides: list, ops: dict, cold: dict) -> dict:
    """One untimed process per side making the calls (each cache's first,
    unless it is already filled): {op: why} for the ops that failed."""
    failed = {}
    for side in sides:
        filled = side.cache.is_dir() and any(side.cache.iterdir())
        entries = side.bekc_entries()
        first = side.run(ops)
        added = side.bekc_entries() - entries
        if side.name == "bekc" and added and (filled or args.prebuild):
            print(f"note: bekc's first process compiled {added} modules that the filled cache "
                  f"lacked", flush=True)
        note = ", cache already filled" if filled else ""
        cold[side.name + (" (cache already filled)" if filled else "")] = first["wall"]
        for name, why in first["errors"].items():
            failed.setdefault(name, f"{side.name}: {why}")
        print(f"first process, {side.name} ({first['mode']}{note}): {fmt(first['wall'])}"
              + (f"; failed: {', '.join(first['errors'])}" if first["errors"] else ""),
              flush=True)
    return failed


def report(args, ops, runs, failed, cold, loads) -> list:
    mode, version = runs["bekc"][0]["mode"], runs["bekc"][0]["version"]
    unchecked = sorted({f"{s}:{op}" for s, rs in runs.items() for r in rs
                        for op, ok in r["checked"].items() if not ok})
    what = ("ops run on the GPU" if mode == "run"
            else "CUDA lowering only: no XLA compile, no kernel run")
    print()
    print(f"{machine_line(*loads)}; brainevent {version}")
    print(f"bekc binary: {args.bekc or '(found by the package)'}; --arch {args.arch}; "
          f"mode {mode} ({what})")
    print(f"medians of {args.reps} new processes per side, interleaved (ABBA); {len(ops)} ops: "
          f"{', '.join(ops)}")
    print("loader calls per process (outermost load_cuda_file/_inline/_dir): "
          + ", ".join(f"{s} {runs[s][0]['loader_calls']}" for s in runs))
    for name, why in failed.items():
        print(f"left out: {name} ({why})")
    if unchecked:
        print(f"WARNING: lowered without the module's targets: {', '.join(unchecked)}")
    print()
    header = f"{'phase':34}{'bekc':>12}{'brainevent':>12}{'bekc/brainevent':>17}"
    print(header)
    print("-" * len(header))
    rows = []

    def row(label, of_run):
        b = median(of_run(r) for r in runs["bekc"])
        k = median(of_run(r) for r in runs["brainevent"])
        r = b / k if k > 1e-4 else None  # brainevent's side has no bekc part
        print(f"{label:34}{fmt(b):>12}{fmt(k):>12}{ratio(r) if r else '-':>17}")
        rows.append({"phase": label, "bekc_s": b, "brainevent_s": k, "ratio": r})

    row("import", lambda r: r["phases"]["import"])
    row("  of which jax", lambda r: r["phases"]["import jax"])
    row("  of which brainevent", lambda r: r["phases"]["import brainevent"])
    row("  of which bekc (its side)", lambda r: r["phases"]["import"]
        - r["phases"]["import jax"] - r["phases"]["import brainevent"])
    row("backend", lambda r: r["phases"]["backend"])
    row(f"first calls ({len(ops)} ops)", lambda r: r["phases"]["first_calls"])
    row("  of which in the loaders", lambda r: r["phases"]["loaders"])
    row("import + first calls", lambda r: r["phases"]["import"] + r["phases"]["first_calls"])
    row("whole process (wall)", lambda r: r["wall"])
    print()
    print("first call of each op (median ms), bekc / brainevent:")
    for op in ops:
        b = median(r["calls"][op] for r in runs["bekc"])
        k = median(r["calls"][op] for r in runs["brainevent"])
        print(f"  {op:16}{b * 1e3:9.1f}{k * 1e3:9.1f}{ratio(b / k):>9}")
    print("first process (the cache filled by compiling, unless said): "
          + ", ".join(f"{k} {fmt(v)}" for k, v in cold.items()))
    return rows


def measure(args, root: Path) -> int:
    ops = {o: OPS[o] for o in args.ops.split(",")}
    sides = [Side(name, args, root / name) for name in SIDES]
    cold = {}
    if args.prebuild:
        cold["bekc build <package>"] = prebuild(args, sides[0])
        print(f"prebuild, bekc build <brainevent package>: {fmt(cold['bekc build <package>'])}",
              flush=True)
    failed = fill_caches(args, sides, ops, cold)
    ops = {k: v for k, v in ops.items() if k not in failed}
    if not ops:
        print("no op could be called on either side:")
        for name, why in failed.items():
            print(f"  {name}: {why}")
        return 1
    load_before = os.getloadavg()
    runs = {s.name: [] for s in sides}
    for rep in range(args.reps):  # interleaved, each side first in every other pair
        for side in (sides if rep % 2 == 0 else sides[::-1]):
            r = side.run(ops)
            if r["errors"]:
                raise RuntimeError(f"{side.name}: ops failed on a warm cache: {r['errors']}")
            runs[side.name].append(r)
    loads = (load_before, os.getloadavg())
    rows = report(args, ops, runs, failed, cold, loads)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({
            "mode": runs["bekc"][0]["mode"], "brainevent": runs["bekc"][0]["version"],
            "ops": list(ops), "failed": failed, "rows": rows, "runs": runs, "cold_s": cold,
            "cpus": os.cpu_count(), "load": loads, "python": sys.version.split()[0],
            "bekc": args.bekc, "arch": args.arch, "reps": args.reps,
        }, indent=1))
    return 0


def main() -> int:
    args = parse_args()
    if brainevent_package(child_env(args.nvcc_home, args.bekc)) is None:
        print(f"brainevent is not installed in {sys.executable}; nothing to measure "
              f"(pip install brainevent==0.2.1)")
        return 0
    root = Path(args.cache_root) if args.cache_root else Path(
        tempfile.mkdtemp(prefix="bekc-bench-be-start-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        return measure(args, root)
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    finally:
        if not args.cache_root:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
