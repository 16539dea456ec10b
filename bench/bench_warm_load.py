#!/usr/bin/env python3
"""Warm load in a new process: bekc against brainevent's pipeline and tvm-ffi.

Issue 30, goal 1: "warm load in a new process: at most 0.5x the fastest peer".
One vector_add CUDA kernel, built for sm_90 through each tool's Python API:

* bekc: ``bekc.load_cuda_inline(name, cuda_sources=..., compute_capability="sm_90")``
  (whatever the ``bekc`` package under python/ does: today it starts the bekc
  binary; with an in-process lookup library it calls that instead);
* brainevent: ``brainevent.load_cuda_inline(...)`` with the same arguments
  (its own kernix pipeline, not routed through bekc);
* tvm-ffi: ``tvm_ffi.cpp.load_inline(name, cuda_sources=..., functions=[...])``
  with ``TVM_FFI_CUDA_ARCH_LIST=9.0``, ``TVM_FFI_GPU_BACKEND=cuda`` and
  ``TVM_FFI_DISABLE_TORCH_C_DLPACK=1`` (so that torch, where installed, is
  neither imported nor given a DLPack addon: this is about JAX).

The ``__global__`` kernel text is the same for all three; only each tool's
entry point differs (a ``// @BE`` function taking ``BE::Tensor`` for bekc and
brainevent, a ``tvm::ffi::TensorView`` function for tvm-ffi).

Measured, each tool with its own empty cache directory:

1. cold: one new process whose load call finds the cache empty (a full
   build), ``--cold-reps`` times (each into a new empty cache);
2. warm, new process: ``--reps`` new Python processes per tool, interleaved
   (bekc, brainevent, tvm-ffi, bekc, ...). Each imports JAX, brings up its
   backend (``jax.devices()``) and imports the tool, untimed; then only the
   load call is timed;
3. warm, same process: the same load call again in each of those processes.

Medians are printed side by side, with bekc's time over each peer's and over
the fastest peer's (the goal: at most 0.5x).

No GPU is needed: the load call compiles (cold) or finds the library, loads
it with dlopen (the CUDA runtime is linked, no device is touched) and
registers its targets with JAX for the CUDA platform (bekc, brainevent) or
wraps its functions (tvm-ffi). No kernel runs. On a machine with a GPU the
same is timed, with JAX's CUDA backend up beforehand.

Needs: the bekc binary (``--bekc``, default build/bekc, else the package's
own lookup), nvcc (``$CUDA_HOME`` or /usr/local/cuda; ``--nvcc-home``), JAX;
brainevent and tvm-ffi are optional: a peer that cannot be imported, or lacks
a tool it needs (tvm-ffi runs ``ninja``), is skipped with the reason.
tvm-ffi is not in the test venv; install it beside it without touching it:

    .venv/bin/python -m pip install --target .bench-deps/py311 apache-tvm-ffi

``.bench-deps/pyXY`` (XY: this Python's version) is put on the children's
path when it exists; ``--extra-path DIR`` adds another directory.

Usage:
    .venv/bin/python bench/bench_warm_load.py [--bekc build/bekc] [--reps 9]
        [--cold-reps 1] [--tools bekc,brainevent,tvm-ffi] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLS = ("bekc", "brainevent", "tvm-ffi")

# The kernel every tool compiles, byte for byte.
KERNEL = r"""
__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}
"""

# bekc's and brainevent's entry point (brainevent's documented example).
BE_SOURCE = '#include <cuda_runtime.h>\n#include "brainevent/common.h"\n' + KERNEL + r"""
// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(a.data_ptr()), static_cast<const float*>(b.data_ptr()),
        static_cast<float*>(out.data_ptr()), n);
}
"""

# tvm-ffi's entry point: load_inline adds its headers and the export macro.
TVM_SOURCE = "#include <cuda_runtime.h>\n" + KERNEL + r"""
void vector_add(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView out) {
    int n = static_cast<int>(a.size(0));
    cudaStream_t stream = static_cast<cudaStream_t>(
        TVMFFIEnvGetStream(a.device().device_type, a.device().device_id));
    add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(
        static_cast<const float*>(a.data_ptr()), static_cast<const float*>(b.data_ptr()),
        static_cast<float*>(out.data_ptr()), n);
}
"""

# One child process: imports untimed, then the load call timed, then again.
CHILD = textwrap.dedent(r"""
    import json, os, sys, time
    tool, source = sys.argv[1], open(sys.argv[2]).read()
    import jax
    jax.devices()                      # the backend is up, as in any program
    if tool == "bekc":
        import bekc
        def load():
            return bekc.load_cuda_inline("bench_vector_add", cuda_sources=source,
                                         compute_capability="sm_90")
    elif tool == "brainevent":
        import brainevent
        def load():
            return brainevent.load_cuda_inline("bench_vector_add", cuda_sources=source,
                                               compute_capability="sm_90")
    else:
        import tvm_ffi, tvm_ffi.cpp
        def load():
            return tvm_ffi.cpp.load_inline("bench_vector_add", cuda_sources=source,
                                           functions=["vector_add"])
    t0 = time.perf_counter()
    mod = load()
    t1 = time.perf_counter()
    again = load()
    t2 = time.perf_counter()
    if tool == "tvm-ffi":
        assert callable(mod.vector_add) and callable(again.vector_add)
    else:
        assert "vector_add" in mod.function_names and "vector_add" in again.function_names
    print(json.dumps({"load_s": t1 - t0, "again_s": t2 - t1}))
""")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def fmt(seconds: float) -> str:
    if seconds != seconds:
        return "n/a"
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def ratio(x: float) -> str:
    return "n/a" if x != x else f"{x:.2f}x"


def bench_deps_dir() -> Path:
    return REPO / ".bench-deps" / f"py{sys.version_info[0]}{sys.version_info[1]}"


class Tool:
    """How one tool's children run: environment, source file, cache directory."""

    def __init__(self, name: str, args, work: Path):
        self.name = name
        self.args = args
        self.work = work
        self.source = work / f"{name}.src"
        self.source.write_text(TVM_SOURCE if name == "tvm-ffi" else BE_SOURCE)
        self.cache = None
        self.new_cache()

    def new_cache(self) -> Path:
        self.cache = Path(tempfile.mkdtemp(prefix=f"{self.name}-cache-", dir=self.work))
        return self.cache

    def env(self) -> dict:
        a = self.args
        path = [str(REPO / "python")]
        if bench_deps_dir().is_dir():
            path.append(str(bench_deps_dir()))
        path += a.extra_path
        if os.environ.get("PYTHONPATH"):
            path.append(os.environ["PYTHONPATH"])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), CUDA_HOME=a.nvcc_home,
                   PATH=os.pathsep.join([str(Path(a.nvcc_home) / "bin"), os.environ["PATH"]]))
        for var in ("BEKC_CACHE_DIR", "BRAINEVENT_CACHE_DIR", "TVM_FFI_CACHE_DIR"):
            env.pop(var, None)
        if self.name == "bekc":
            env["BEKC_CACHE_DIR"] = str(self.cache)
            if a.bekc:
                env["BEKC"] = a.bekc
        elif self.name == "brainevent":
            env["BRAINEVENT_CACHE_DIR"] = str(self.cache)
        else:
            env["TVM_FFI_CACHE_DIR"] = str(self.cache)
            env["TVM_FFI_CUDA_ARCH_LIST"] = "9.0"
            # Where torch is installed, tvm_ffi would import it on import (and
            # compile a DLPack addon for it) and on the first load (to pick CUDA
            # or HIP); neither is part of loading a kernel for JAX.
            env["TVM_FFI_DISABLE_TORCH_C_DLPACK"] = "1"
            env["TVM_FFI_GPU_BACKEND"] = "cuda"
        return env

    def run(self) -> dict:
        proc = subprocess.run([sys.executable, "-c", CHILD, self.name, str(self.source)],
                              env=self.env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{self.name}: child process failed ({proc.returncode}):\n"
                               f"{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def missing(self) -> str:
        """Why this tool cannot be measured here, or ""."""
        module = {"bekc": "bekc", "brainevent": "brainevent", "tvm-ffi": "tvm_ffi"}[self.name]
        probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        if subprocess.run([sys.executable, "-c", probe], env=self.env()).returncode != 0:
            hint = {"tvm-ffi": f"pip install --target {bench_deps_dir()} apache-tvm-ffi",
                    "brainevent": "pip install brainevent==0.2.1"}.get(self.name, "")
            return f"{module} is not importable from {sys.executable}" + \
                (f" (install: {hint})" if hint else "")
        if self.name == "tvm-ffi" and shutil.which("ninja") is None:
            return "tvm-ffi builds and looks up through `ninja`, which is not on PATH"
        return ""


def locate_bekc(explicit: str | None) -> str | None:
    if explicit:
        return str(Path(explicit).resolve())
    built = REPO / "build" / "bekc"
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    return None  # the package finds its own ($BEKC, the wheel's, PATH, bekc/bin)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bekc", default=os.environ.get("BEKC_BINARY"),
                    help="the bekc binary (default: build/bekc, else the package's lookup)")
    ap.add_argument("--reps", type=int, default=9, help="new processes per tool (warm)")
    ap.add_argument("--cold-reps", type=int, default=1,
                    help="cold builds per tool, each into an empty cache (0: none)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--nvcc-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--extra-path", action="append", default=[],
                    help="a directory put on the children's PYTHONPATH (repeatable)")
    ap.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
    args = ap.parse_args()
    args.bekc = locate_bekc(args.bekc)

    wanted = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = [t for t in wanted if t not in TOOLS]
    if unknown:
        ap.error(f"--tools takes {', '.join(TOOLS)}; not {', '.join(unknown)}")
    work = Path(tempfile.mkdtemp(prefix="bekc-bench-warm-load-"))
    tools, skipped = [], {}
    for name in wanted:
        tool = Tool(name, args, work)
        why = tool.missing()
        if why:
            skipped[name] = why
            print(f"skipping {name}: {why}", flush=True)
        else:
            tools.append(tool)
    load_before = os.getloadavg()
    cold = {t.name: [] for t in tools}
    # The first build of each tool fills its cache; a tool whose first build or
    # load fails (a compiler or library it cannot find) is skipped with the reason.
    for rep in range(max(args.cold_reps, 1)):
        for t in list(tools):
            t.new_cache()
            try:
                seconds = t.run()["load_s"]
            except RuntimeError as e:
                if rep:
                    raise
                skipped[t.name] = f"its first build failed: {str(e)[-600:]}"
                print(f"skipping {t.name}: {e}", flush=True)
                tools.remove(t)
                continue
            if args.cold_reps:
                cold[t.name].append(seconds)
                print(f"cold {t.name}: {fmt(seconds)}", flush=True)
    if "bekc" not in [t.name for t in tools]:
        print("bekc cannot be measured; nothing to compare", file=sys.stderr)
        return 1
    warm = {t.name: [] for t in tools}
    again = {t.name: [] for t in tools}
    for _ in range(args.reps):
        for t in tools:
            r = t.run()
            warm[t.name].append(r["load_s"])
            again[t.name].append(r["again_s"])
    load_after = os.getloadavg()

    rows = [("cold build, load call", cold), ("warm, new process, load call", warm),
            ("warm, same process, load call again", again)]
    names = [t.name for t in tools]
    print()
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, load average "
          f"{load_before[0]:.2f} before / {load_after[0]:.2f} after; Python "
          f"{platform.python_version()}")
    print(f"bekc binary: {args.bekc or '(found by the package)'}; nvcc home: {args.nvcc_home}")
    print(f"medians: {args.cold_reps} cold, {args.reps} warm processes per tool, interleaved")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    print()
    header = f"{'':38}" + "".join(f"{n:>13}" for n in names)
    peers = [n for n in names if n != "bekc"]
    header += "".join(f"{'bekc/' + n:>17}" for n in peers)
    if peers:
        header += f"{'bekc/fastest':>14}"
    print(header)
    print("-" * len(header))
    table = []
    for label, data in rows:
        m = {n: median(data[n]) for n in names}
        line = f"{label:38}" + "".join(f"{fmt(m[n]):>13}" for n in names)
        ratios = {n: m["bekc"] / m[n] for n in peers}
        line += "".join(f"{ratio(ratios[n]):>17}" for n in peers)
        fastest = min((m[n] for n in peers), default=float("nan"))
        if peers:
            line += f"{ratio(m['bekc'] / fastest):>14}"
        print(line)
        table.append({"row": label, "median_s": m, "bekc_over_peer": ratios,
                      "bekc_over_fastest_peer": m["bekc"] / fastest if peers else None})
    print()
    spread = ", ".join(f"{n} {fmt(min(warm[n]))}-{fmt(max(warm[n]))}" for n in names)
    print(f"warm, new process, min-max: {spread}")
    print("goal (issue 30): warm, new process, bekc at most 0.5x the fastest peer")

    if args.json_out:
        Path(args.json_out).write_text(json.dumps({
            "cold_s": cold, "warm_s": warm, "again_s": again, "rows": table,
            "skipped": skipped, "cpus": os.cpu_count(), "load": [load_before, load_after],
            "python": platform.python_version(), "bekc": args.bekc, "reps": args.reps,
            "cold_reps": args.cold_reps,
        }, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
