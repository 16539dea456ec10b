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
3. warm, same process: the same load call again in each of those processes;
4. the tool's import in those processes (after JAX's), and the import plus the
   first load call: what a tool sets up on import (bekc opens its lookup
   library and looks up the interpreter's include directories there, tvm-ffi
   opens ``libtvm_ffi.so``) is not in the load call, so both are shown.
   bekc's package is byte-compiled first, as pip compiles an installed one.

Medians are printed side by side, with bekc's time over each peer's and over
the fastest peer's (the goal: at most 0.5x).

Where bekc's in-process lookup library (``libbekc_lookup.so``) lies beside the
binary, a fourth column, ``bekc-binary``, times bekc with it turned off
(``BEKC_IN_PROCESS_LOOKUP=0``: the loader starts the binary, as before it),
so one run shows both; ``--tools`` picks any subset.

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

``--baseline DIR`` names an earlier checkout with its binary built (its
``python/`` and ``build/bekc``): ``bekc-earlier`` and ``bekc-binary-earlier``
time that package and binary in the same run, interleaved with the others.

Usage:
    .venv/bin/python bench/bench_warm_load.py [--bekc build/bekc] [--reps 9]
        [--cold-reps 1] [--tools bekc,brainevent,tvm-ffi,bekc-binary] [--json FILE]
        [--baseline DIR]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from _child import (REPO, bench_deps_dir, child_env, fmt, locate_bekc, machine_line, median, ratio,
                    run_child)

TOOLS = ("bekc", "brainevent", "tvm-ffi", "bekc-binary")
# With --baseline: bekc and bekc-binary of an earlier checkout, in the same run.
EARLIER = "-earlier"
PEERS = ("brainevent", "tvm-ffi")
LOOKUP_LIBRARY = "libbekc_lookup.so"  # bekc's in-process lookup, beside a built binary

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
    ti = time.perf_counter()
    if tool.startswith("bekc"):
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
    import_s = time.perf_counter() - ti
    t0 = time.perf_counter()
    mod = load()
    t1 = time.perf_counter()
    again = load()
    t2 = time.perf_counter()
    if tool == "tvm-ffi":
        assert callable(mod.vector_add) and callable(again.vector_add)
    else:
        assert "vector_add" in mod.function_names and "vector_add" in again.function_names
    print(json.dumps({"load_s": t1 - t0, "again_s": t2 - t1, "import_s": import_s}))
""")


class Tool:
    """How one tool's children run: environment, source file, cache directory."""

    MODULE = {"bekc": "bekc", "bekc-binary": "bekc", "brainevent": "brainevent",
              "tvm-ffi": "tvm_ffi", "bekc" + EARLIER: "bekc", "bekc-binary" + EARLIER: "bekc"}

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
        name = self.name[:-len(EARLIER)] if self.name.endswith(EARLIER) else self.name
        if name == "bekc":
            own = {"BEKC_CACHE_DIR": str(self.cache)}
        elif name == "bekc-binary":  # the in-process lookup off: the binary answers
            own = {"BEKC_CACHE_DIR": str(self.cache), "BEKC_IN_PROCESS_LOOKUP": "0"}
        elif name == "brainevent":
            own = {"BRAINEVENT_CACHE_DIR": str(self.cache)}
        else:
            # Where torch is installed, tvm_ffi would import it on import (and
            # compile a DLPack addon for it) and on the first load (to pick CUDA
            # or HIP); neither is part of loading a kernel for JAX.
            own = {"TVM_FFI_CACHE_DIR": str(self.cache), "TVM_FFI_CUDA_ARCH_LIST": "9.0",
                   "TVM_FFI_DISABLE_TORCH_C_DLPACK": "1", "TVM_FFI_GPU_BACKEND": "cuda"}
        if name != self.name:  # the earlier checkout's package and binary
            base = Path(self.args.baseline)
            env = child_env(self.args.nvcc_home, str(base / "build" / "bekc"),
                            self.args.extra_path, **own)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(base / "python")] + env["PYTHONPATH"].split(os.pathsep)[1:])
            return env
        return child_env(self.args.nvcc_home, self.args.bekc, self.args.extra_path, **own)

    def run(self) -> dict:
        return run_child(CHILD, [self.name, self.source], self.env(), self.name)

    def missing(self) -> str:
        """Why this tool cannot be measured here, or ""."""
        module = self.MODULE[self.name]
        probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        env = self.env()
        if subprocess.run([sys.executable, "-c", probe], env=env).returncode != 0:
            hint = {"tvm-ffi": f"pip install --target {bench_deps_dir()} apache-tvm-ffi",
                    "brainevent": "pip install brainevent==0.2.1"}.get(self.name, "")
            return f"{module} is not importable from {sys.executable}" + \
                (f" (install: {hint})" if hint else "")
        if self.name == "tvm-ffi" and shutil.which("ninja", path=env["PATH"]) is None:
            return "tvm-ffi builds and looks up through `ninja`, which is not on PATH"
        return ""


def lookup_library(bekc: str | None) -> str | None:
    """bekc's in-process lookup library beside the binary, where there is one."""
    if not bekc:
        return None
    library = Path(bekc).resolve().parent / LOOKUP_LIBRARY
    return str(library) if library.is_file() else None


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bekc", default=os.environ.get("BEKC_BINARY"),
                    help="the bekc binary (default: build/bekc, else the package's lookup)")
    ap.add_argument("--reps", type=int, default=9, help="new processes per tool (warm)")
    ap.add_argument("--cold-reps", type=int, default=1,
                    help="cold builds per tool, each into an empty cache (0: none)")
    ap.add_argument("--tools", default=None,
                    help=f"a comma-separated subset of {', '.join(TOOLS)} (default: all, "
                         f"bekc-binary only where {LOOKUP_LIBRARY} is beside the binary)")
    ap.add_argument("--nvcc-home", default=os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    ap.add_argument("--extra-path", action="append", default=[],
                    help="a directory put on the children's PYTHONPATH (repeatable)")
    ap.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
    ap.add_argument("--baseline", default=None,
                    help="an earlier checkout (its python/ and build/bekc): adds bekc"
                         f"{EARLIER} and bekc-binary{EARLIER}, timed in the same run")
    args = ap.parse_args()
    args.bekc = locate_bekc(args.bekc)
    known = TOOLS + ((f"bekc{EARLIER}", f"bekc-binary{EARLIER}") if args.baseline else ())
    if args.tools is None:
        args.tools = ",".join(t for t in known
                              if "bekc-binary" not in t or lookup_library(args.bekc))
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = [t for t in args.tools if t not in known]
    if unknown:
        ap.error(f"--tools takes {', '.join(known)}; not {', '.join(unknown)}")
    return args


def usable_tools(args, work: Path, skipped: dict) -> list:
    tools = []
    for name in args.tools:
        tool = Tool(name, args, work)
        why = tool.missing()
        if why:
            skipped[name] = why
            print(f"skipping {name}: {why}", flush=True)
        else:
            tools.append(tool)
    return tools


def cold_builds(args, tools: list, skipped: dict) -> dict:
    """Each tool's first builds, each into an empty cache (the last one stays
    filled). A tool whose first build or load fails (a compiler or library it
    cannot find) is dropped from ``tools`` with the reason."""
    cold = {t.name: [] for t in tools}
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
                del cold[t.name]
                continue
            if args.cold_reps:
                cold[t.name].append(seconds)
                print(f"cold {t.name}: {fmt(seconds)}", flush=True)
    return cold


def report(args, names, rows, warm, skipped, loads) -> list:
    print()
    print(machine_line(*loads))
    library = lookup_library(args.bekc)
    print(f"bekc binary: {args.bekc or '(found by the package)'}; nvcc home: {args.nvcc_home}")
    lookup = (f"{library} (beside the binary)" if library
              else "none beside the binary: the loader starts the binary")
    if "bekc-binary" in names:
        lookup += "; bekc-binary: bekc with BEKC_IN_PROCESS_LOOKUP=0"
    print(f"bekc's in-process lookup: {lookup}")
    print(f"medians: {args.cold_reps} cold, {args.reps} warm processes per tool, interleaved")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    print()
    others = [n for n in names if n != "bekc"]
    peers = [n for n in names if n in PEERS]
    header = (f"{'':38}" + "".join(f"{n:>13}" for n in names)
              + "".join(f"{'bekc/' + n:>17}" for n in others)
              + (f"{'bekc/fastest':>14}" if peers else ""))
    print(header)
    print("-" * len(header))
    table = []
    for label, data in rows:
        m = {n: median(data[n]) for n in names}
        ratios = {n: m["bekc"] / m[n] for n in others}
        fastest = min((m[n] for n in peers), default=float("nan"))
        print(f"{label:38}" + "".join(f"{fmt(m[n]):>13}" for n in names)
              + "".join(f"{ratio(ratios[n]):>17}" for n in others)
              + (f"{ratio(m['bekc'] / fastest):>14}" if peers else ""))
        table.append({"row": label, "median_s": m, "bekc_over_peer": ratios,
                      "bekc_over_fastest_peer": m["bekc"] / fastest if peers else None})
    print()
    spread = ", ".join(f"{n} {fmt(min(warm[n]))}-{fmt(max(warm[n]))}" for n in names)
    print(f"warm, new process, min-max: {spread}")
    print("goal (issue 30): warm, new process, bekc at most 0.5x the fastest peer")
    return table


def main() -> int:
    args = parse_args()
    # As pip byte-compiles an installed package: the children import bekc from
    # python/, and where PYTHONDONTWRITEBYTECODE is set nothing else would.
    compileall.compile_dir(str(REPO / "python" / "bekc"), quiet=1)
    if args.baseline:
        compileall.compile_dir(str(Path(args.baseline) / "python" / "bekc"), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="bekc-bench-warm-load-"))
    try:
        skipped = {}
        tools = usable_tools(args, work, skipped)
        load_before = os.getloadavg()
        cold = cold_builds(args, tools, skipped)
        if "bekc" not in [t.name for t in tools]:
            print("bekc cannot be measured; nothing to compare", file=sys.stderr)
            return 1
        warm = {t.name: [] for t in tools}
        again = {t.name: [] for t in tools}
        imports = {t.name: [] for t in tools}
        first = {t.name: [] for t in tools}
        for _ in range(args.reps):  # interleaved: A B C A B C ...
            for t in tools:
                r = t.run()
                warm[t.name].append(r["load_s"])
                again[t.name].append(r["again_s"])
                imports[t.name].append(r["import_s"])
                first[t.name].append(r["import_s"] + r["load_s"])
        loads = (load_before, os.getloadavg())
        rows = [("cold build, load call", cold), ("warm, new process, load call", warm),
                ("warm, same process, load call again", again),
                ("the tool's import (after JAX's)", imports),
                ("warm, new process, import + load call", first)]
        table = report(args, [t.name for t in tools], rows, warm, skipped, loads)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps({
                "cold_s": cold, "warm_s": warm, "again_s": again, "import_s": imports,
                "rows": table,
                "skipped": skipped, "cpus": os.cpu_count(), "load": loads,
                "python": sys.version.split()[0], "bekc": args.bekc, "reps": args.reps,
                "cold_reps": args.cold_reps,
            }, indent=1))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
