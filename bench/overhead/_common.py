"""Shared pieces of the handler-overhead benchmarks (CPU and GPU).

Registers handlers straight from a bekc manifest or a plain shared library
through ctypes and ``jax.ffi.register_ffi_target`` (no ``bekc`` package), and
times jitted calls two ways:

* per call: one jitted call from Python, ``block_until_ready``, timed alone;
  the three variants are interleaved call by call so drift hits them alike;
* in a jit loop: ``lax.fori_loop`` of N calls inside one jitted function,
  timed per run and divided by N.
"""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import subprocess
import time

import jax

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

_LOADED: list = []


def bekc_binary() -> str:
    path = os.environ.get("BEKC_BINARY") or os.path.join(REPO, "build", "bekc")
    if not os.access(path, os.X_OK):
        raise SystemExit(f"no bekc binary at {path} (build it, or set BEKC_BINARY)")
    return path


def run(argv, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr}{proc.stdout}")
    return proc


def bekc_build(source, cache_dir, prefix, extra=()):
    proc = run([bekc_binary(), "build", source, "--cache-dir", cache_dir, "--target-prefix", prefix,
                "--json", "-q", *extra])
    return json.loads(proc.stdout)


def register_bekc(manifest_path, function, symbol_suffix="", name_suffix=""):
    with open(manifest_path) as f:
        manifest = json.load(f)
    lib = ctypes.CDLL(os.path.join(os.path.dirname(manifest_path), manifest["library"]))
    _LOADED.append(lib)
    (t,) = [t for t in manifest["targets"] if t["function"] == function]
    name = t["name"] + name_suffix
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, t["symbol"] + symbol_suffix)),
                                platform=t["platform"])
    return name


def register_library(path, symbol, name, platform):
    lib = ctypes.CDLL(path)
    _LOADED.append(lib)
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, symbol)), platform=platform)
    return name


def time_per_call(fns: dict, x, calls: int, warmup: int = 200) -> dict:
    """Median microseconds of one jitted call (dispatch + run + sync), interleaved."""
    for f in fns.values():
        for _ in range(warmup):
            f(x).block_until_ready()
    samples = {k: [] for k in fns}
    clock = time.perf_counter_ns
    for _ in range(calls):
        for k, f in fns.items():
            t0 = clock()
            f(x).block_until_ready()
            samples[k].append(clock() - t0)
    return {k: statistics.median(v) / 1e3 for k, v in samples.items()}


def time_in_loop(fns: dict, x, iterations: int, repeats: int) -> dict:
    """Median microseconds per iteration of a jitted lax.fori_loop of `iterations` calls."""
    loops = {k: jax.jit(lambda v, f=f: jax.lax.fori_loop(0, iterations, lambda i, u: f(u), v))
             for k, f in fns.items()}
    for g in loops.values():
        g(x).block_until_ready()  # compile
        g(x).block_until_ready()
    samples = {k: [] for k in loops}
    for _ in range(repeats):
        for k, g in loops.items():
            t0 = time.perf_counter_ns()
            g(x).block_until_ready()
            samples[k].append((time.perf_counter_ns() - t0) / iterations)
    return {k: statistics.median(v) / 1e3 for k, v in samples.items()}


def print_table(rows, per_call, in_loop, ratio_keys, title):
    print(title)
    print(f"{'variant':<34} {'per call (us)':>14} {'jit loop (us/iter)':>19}")
    for key, label in rows:
        print(f"{label:<34} {per_call[key]:>14.2f} {in_loop[key]:>19.3f}")
    a, b = ratio_keys
    print(f"{'ratio (a)/(b)':<34} {per_call[a] / per_call[b]:>14.3f} {in_loop[a] / in_loop[b]:>19.3f}")


def environment() -> str:
    import jaxlib
    load = os.getloadavg()
    return (f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, backend {jax.default_backend()}, "
            f"{os.cpu_count()} CPUs, load average {load[0]:.1f}")
