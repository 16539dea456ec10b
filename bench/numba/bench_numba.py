#!/usr/bin/env python3
"""Per-call cost of Numba-CUDA kernels called from JAX (run on a GPU machine).

Two operations, each four ways, under jax.jit:
  bekc numba   bekc.numba_cuda_kernel: the kernel Numba compiled, launched by
               libbekc_numba's compiled handler (no Python per call,
               command-buffer trait);
  bridge       the usual bridge, written here: a Python ctypes callback
               registered as the FFI handler, which decodes the call frame with
               ctypes, wraps the buffers as Numba device arrays and launches
               the same Numba kernel on XLA's stream (no command-buffer trait);
  CUDA C++     the same kernel in CUDA C++ (kernels.cu), built by bekc;
  jax.numpy    the same operation in jax.numpy.
Operations: the seed tutorial's LIF step (spike detection and reset, 10,000
neurons, fused into one kernel) and a vector add (10,000 float32).

Per call: median of --calls single jitted calls (block_until_ready each),
interleaved; the same without waiting for each call (the host's cost of a
call); and the mean of calls dispatched back to back. In a loop: a jitted
lax.fori_loop of --loop steps, median of --repeats runs, per step.

The two parts run in separate processes, because XLA reads XLA_FLAGS once:
the per-call measures with XLA's default command-buffer settings (any
--xla_gpu_enable_command_buffer / --xla_gpu_graph_min_graph_size in XLA_FLAGS
are dropped), the loop with command buffers for fusions and custom calls and no
minimum graph size. Forcing graphs on the per-call measures would turn every
single-op executable into a CUDA graph launch, which only the variants that
report the command-buffer trait (not the bridge) would pay.

    python bench/numba/bench_numba.py [--calls 10000] [--loop 1000]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

_GRAPH_FLAGS = ("--xla_gpu_enable_command_buffer", "--xla_gpu_graph_min_graph_size")
_LOOP_FLAGS = ["--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL",
               "--xla_gpu_graph_min_graph_size=1"]


def _run_parts() -> int:
    """Runs this script once per part, each with the XLA_FLAGS it needs."""
    base = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(_GRAPH_FLAGS)]
    for part, flags in (("calls", base), ("loop", base + _LOOP_FLAGS)):
        env = dict(os.environ, XLA_FLAGS=" ".join(flags))
        rc = subprocess.run([sys.executable, os.path.abspath(__file__), "--part", part,
                             *sys.argv[1:]], env=env).returncode
        if rc != 0:
            return rc
    return 0


if __name__ == "__main__" and "--part" not in sys.argv:
    sys.exit(_run_parts())

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench", "overhead"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import _common  # noqa: E402
import bekc  # noqa: E402
from bekc._numba_cuda import _numba_cuda  # noqa: E402

cuda = _numba_cuda()


# ----------------------------------------------------------------- the Numba kernels
@cuda.jit
def vector_add_kernel(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


@cuda.jit
def lif_kernel(V, V_th, V_rest, spikes, V_out):
    i = cuda.grid(1)
    if i < V.size:
        s = 1 if V[i] >= V_th[0] else 0
        spikes[i] = s
        V_out[i] = V_rest[0] if s else V[i]


# ----------------------------------------------------------------- the ctypes bridge
# The XLA FFI call frame as ctypes structures (xla/ffi/api/c_api.h; the same
# layout as runtime/include/bekc/xla_ffi_abi.h).
class _Ext(ctypes.Structure):
    pass


_Ext._fields_ = [("struct_size", ctypes.c_size_t), ("type", ctypes.c_int32),
                 ("next", ctypes.POINTER(_Ext))]


class _ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("major_version", ctypes.c_int32), ("minor_version", ctypes.c_int32)]


class _Metadata(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", _ApiVersion),
                ("traits", ctypes.c_uint32)]


class _MetadataExt(ctypes.Structure):
    _fields_ = [("extension_base", _Ext), ("metadata", ctypes.POINTER(_Metadata))]


class _Buffer(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("dtype", ctypes.c_int32), ("data", ctypes.c_void_p), ("rank", ctypes.c_int64),
                ("dims", ctypes.POINTER(ctypes.c_int64))]


class _List(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("size", ctypes.c_int64), ("types", ctypes.POINTER(ctypes.c_int32)),
                ("items", ctypes.POINTER(ctypes.POINTER(_Buffer)))]


class _Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("size", ctypes.c_int64), ("types", ctypes.c_void_p), ("names", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p)]


class _StreamGetArgs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("ctx", ctypes.c_void_p), ("stream", ctypes.c_void_p)]


_STREAM_GET = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_StreamGetArgs))


class _Api(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("api_version", _ApiVersion), ("internal_api", ctypes.c_void_p),
                ("error_create", ctypes.c_void_p), ("error_get_message", ctypes.c_void_p),
                ("error_destroy", ctypes.c_void_p), ("handler_register", ctypes.c_void_p),
                ("stream_get", _STREAM_GET)]


class _CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.POINTER(_Ext)),
                ("api", ctypes.POINTER(_Api)), ("ctx", ctypes.c_void_p), ("stage", ctypes.c_int32),
                ("args", _List), ("rets", _List), ("attrs", _Attrs)]


_HANDLER = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_CallFrame))
_TYPESTR = {11: "<f4", 4: "<i4"}
_BRIDGES = []


def ctypes_bridge(name, kernel, grid, block):
    """Registers `name` as a CUDA FFI target served by a Python callback."""
    streams = {}

    def handler(frame_p):
        frame = frame_p.contents
        if frame.extension_start:  # XLA's metadata query at registration
            ext = frame.extension_start.contents
            if ext.type == 1:
                md = ctypes.cast(frame.extension_start, ctypes.POINTER(_MetadataExt)).contents
                md.metadata.contents.api_version.major_version = 0
                md.metadata.contents.api_version.minor_version = 1
                md.metadata.contents.traits = 0
                return None
        arrays = []
        for lst in (frame.args, frame.rets):
            for i in range(lst.size):
                b = lst.items[i].contents
                shape = tuple(b.dims[d] for d in range(b.rank))
                arrays.append(cuda.from_cuda_array_interface(
                    {"shape": shape, "typestr": _TYPESTR[b.dtype], "data": (b.data, False),
                     "strides": None, "version": 3}, owner=None, sync=False))
        args = _StreamGetArgs(ctypes.sizeof(_StreamGetArgs), None, frame.ctx, None)
        frame.api.contents.stream_get(ctypes.byref(args))
        s = streams.get(args.stream)
        if s is None:
            s = streams[args.stream] = cuda.external_stream(args.stream)
        kernel[grid, block, s](*arrays)
        return None

    cb = _HANDLER(handler)
    _BRIDGES.append(cb)
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(cb), platform="CUDA")
    return name


# ----------------------------------------------------------------- timing
def per_call(fns, args, calls, warmup=200):
    for f in fns.values():
        for _ in range(warmup):
            jax.block_until_ready(f(*args))
    samples = {k: [] for k in fns}
    clock = time.perf_counter_ns
    for _ in range(calls):
        for k, f in fns.items():
            t0 = clock()
            jax.block_until_ready(f(*args))
            samples[k].append(clock() - t0)
    return {k: statistics.median(v) / 1e3 for k, v in samples.items()}


def per_call_no_wait(fns, args, calls, group=100):
    """Median of `calls` individually timed jitted calls that do not wait for
    the GPU: the host's cost of one call, as in a simulation loop that does
    not synchronise every step. The results are waited for every `group`
    calls, outside the timed region, so the queue stays short."""
    for f in fns.values():
        for _ in range(group):
            jax.block_until_ready(f(*args))
    samples = {k: [] for k in fns}
    clock = time.perf_counter_ns
    for _ in range(max(1, calls // group)):
        for k, f in fns.items():
            outs = []
            for _ in range(group):
                t0 = clock()
                outs.append(f(*args))
                samples[k].append(clock() - t0)
            jax.block_until_ready(outs)
    return {k: statistics.median(v) / 1e3 for k, v in samples.items()}


def back_to_back(fns, args, calls, batches=20):
    """Median over `batches` of the mean time per call of `calls // batches`
    jitted calls dispatched back to back (one block_until_ready per batch):
    what a call costs the host once the round trip to the GPU is overlapped."""
    per_batch = max(1, calls // batches)
    samples = {k: [] for k in fns}
    for _ in range(batches):
        for k, f in fns.items():
            out = None
            t0 = time.perf_counter_ns()
            for _ in range(per_batch):
                out = f(*args)
            jax.block_until_ready(out)
            samples[k].append((time.perf_counter_ns() - t0) / per_batch)
    return {k: statistics.median(v) / 1e3 for k, v in samples.items()}


def in_loop(steps, init, iterations, repeats):
    loops = {k: jax.jit(lambda v, s=s: jax.lax.fori_loop(0, iterations, lambda i, u: s(u), v))
             for k, s in steps.items()}
    for g in loops.values():
        jax.block_until_ready(g(init))
        jax.block_until_ready(g(init))
    samples = {k: [] for k in loops}
    for _ in range(repeats):
        for k, g in loops.items():
            t0 = time.perf_counter_ns()
            jax.block_until_ready(g(init))
            samples[k].append((time.perf_counter_ns() - t0) / iterations)
    return {k: statistics.median(v) / 1e3 for k, v in samples.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="neurons / vector length")
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--loop", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--arch", default="native")
    ap.add_argument("--part", choices=("calls", "loop"), default=None,
                    help="run one part in this process (default: both, each in its own)")
    opts = ap.parse_args()
    n = opts.n
    f32 = jax.ShapeDtypeStruct((n,), jnp.float32)
    i32 = jax.ShapeDtypeStruct((n,), jnp.int32)
    grid, block = (n + 255) // 256, 256

    cache = tempfile.mkdtemp(prefix="bekc-bench-numba-")
    built = _common.bekc_build(os.path.join(HERE, "kernels.cu"), cache, "bench_numba",
                               ["--arch", opts.arch])
    cpp = bekc.load(built["manifest"])

    add_bekc = bekc.numba_cuda_kernel(vector_add_kernel, outs=f32, grid=grid, block=block)
    lif_bekc = bekc.numba_cuda_kernel(lif_kernel, outs=[i32, f32], grid=grid, block=block)
    add_bridge_t = ctypes_bridge("bench_bridge.vector_add", vector_add_kernel, grid, block)
    lif_bridge_t = ctypes_bridge("bench_bridge.lif", lif_kernel, grid, block)

    def add_bridge(x, y):
        return jax.ffi.ffi_call(add_bridge_t, f32)(x, y)

    def lif_bridge(v, th, rest):
        return jax.ffi.ffi_call(lif_bridge_t, [i32, f32])(v, th, rest)

    def lif_jnp(v, th, rest):
        s = (v >= th[0]).astype(jnp.int32)
        return s, jnp.where(s, rest[0], v)

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal(n).astype(np.float32))
    y = jnp.asarray(rng.standard_normal(n).astype(np.float32))
    V = jnp.asarray(rng.uniform(-75.0, -50.0, n).astype(np.float32))
    th, rest = jnp.asarray([-55.0], jnp.float32), jnp.asarray([-70.0], jnp.float32)

    workloads = {
        "LIF step": ((V, th, rest), {
            "bekc numba": lif_bekc, "bridge": lif_bridge,
            "CUDA C++": lambda v, a, b: cpp.lif_step(v, a, b, out=[i32, f32]),
            "jax.numpy": lif_jnp}),
        "vector add": ((x, y), {
            "bekc numba": add_bekc, "bridge": add_bridge,
            "CUDA C++": lambda a, b: cpp.vector_add(a, b, out=f32),
            "jax.numpy": lambda a, b: a + b}),
    }
    # Check every variant against jax.numpy before timing it.
    for wname, (args, fns) in workloads.items():
        want = fns["jax.numpy"](*args)
        for k, f in fns.items():
            got = jax.jit(f)(*args)
            for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6,
                                           err_msg=f"{wname}: {k}")

    if opts.part == "calls":
        print(f"# bench/numba/bench_numba.py  n={n} calls={opts.calls} loop={opts.loop} "
              f"repeats={opts.repeats}")
        print(f"# {_common.environment()}, {jax.devices()[0].device_kind}")
    print(f"# part {opts.part}: XLA_FLAGS={os.environ.get('XLA_FLAGS', '').strip()}")
    cols = ["bekc numba", "CUDA C++", "bridge", "jax.numpy"]

    def table(title):
        print()
        print(title)
        print(f"{'operation':<12}" + "".join(f"{c:>12}" for c in cols)
              + f"{'bekc/C++':>10}{'bridge/bekc':>13}")

    def row(wname, t, digits):
        print(f"{wname:<12}" + "".join(f"{t[c]:>12.{digits}f}" for c in cols)
              + f"{t['bekc numba'] / t['CUDA C++']:>10.3f}{t['bridge'] / t['bekc numba']:>13.2f}")

    if opts.part == "calls":
        for title, measure in (
                ("per call, median us (one jitted call + block_until_ready)", per_call),
                ("per call without waiting, median us (block_until_ready every 100 calls, "
                 "untimed)", per_call_no_wait),
                ("per call, back to back, us (median over 20 batches of the mean of calls/20 calls)",
                 back_to_back)):
            table(title)
            for wname, (args, fns) in workloads.items():
                row(wname, measure({k: jax.jit(fns[k]) for k in cols}, args, opts.calls), 2)
        return 0

    table(f"lax.fori_loop of {opts.loop} steps, median us per step")
    steps = {
        "LIF step": (V, {k: (lambda v, f=f: f(v, th, rest)[1])
                         for k, f in workloads["LIF step"][1].items()}),
        "vector add": (x, {k: (lambda v, f=f: f(v, y))
                           for k, f in workloads["vector add"][1].items()}),
    }
    kernels = {"LIF step": lif_bekc, "vector add": add_bekc}
    for wname, (init, fns) in steps.items():
        before = kernels[wname].launch_stats()
        row(wname, in_loop({k: fns[k] for k in cols}, init, opts.loop, opts.repeats), 3)
        after = kernels[wname].launch_stats()
        runs = 2 + opts.repeats
        print(f"#   {wname}: bekc numba handler ran {after['launches'] - before['launches']} times "
              f"for {runs} loops of {opts.loop} steps ({after['captured'] - before['captured']} "
              f"launches captured into CUDA graphs, then replayed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
