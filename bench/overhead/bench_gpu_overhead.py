#!/usr/bin/env python3
"""Per-call overhead of a bekc handler on JAX's CUDA platform (run on a GPU machine).

The same trivial kernel (out = x * scale, one launch on XLA's stream):
  (a)  through the handler bekc generates (trivial_bekc.cu, built by bekc),
  (a') the same library's _nograph handler (no command-buffer trait),
  (b)  through a handler written with XLA's own xla/ffi/api/ffi.h
       (trivial_xla_ffi.cu, compiled here with nvcc -shared against
       jax.ffi.include_dir()),
  (c)  as jax.numpy (x * scale).
Median over --calls single jitted calls (interleaved), and per iteration of a
jitted lax.fori_loop of --loop calls (median of --repeats runs). The loop is
where XLA may capture command-buffer-compatible custom calls in CUDA graphs,
so (a) and (a') can differ there.

    python bench/overhead/bench_gpu_overhead.py [--arch sm_90] [--calls 10000]

Needs jax with CUDA (jax[cuda12] or jax[cuda13]), nvcc, and a built bekc
($BEKC_BINARY or build/bekc).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import uuid

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402


def find_nvcc(explicit):
    if explicit:
        return explicit
    for d in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if d and os.access(os.path.join(d, "bin", "nvcc"), os.X_OK):
            return os.path.join(d, "bin", "nvcc")
    found = shutil.which("nvcc")
    if not found:
        raise SystemExit("nvcc not found: pass --nvcc or set CUDA_HOME")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90", help="one sm_XX for both libraries (default sm_90)")
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--loop", type=int, default=10000, help="iterations of the jitted fori_loop")
    ap.add_argument("--repeats", type=int, default=15, help="timed runs of the loop")
    ap.add_argument("--size", type=int, default=1024, help="elements in the buffer")
    ap.add_argument("--nvcc")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()

    if jax.default_backend() != "gpu":
        raise SystemExit(f"JAX backend is {jax.default_backend()!r}: install jax with CUDA "
                         "(jax[cuda12] / jax[cuda13]) and run on a GPU machine")
    nvcc = find_nvcc(args.nvcc)
    sm = args.arch.removeprefix("sm_")
    tag = uuid.uuid4().hex[:6]
    with tempfile.TemporaryDirectory(prefix="bekc-bench-gpu-") as tmp:
        built = _common.bekc_build(os.path.join(_common.HERE, "trivial_bekc.cu"),
                                   os.path.join(tmp, "cache"), f"ovhg_{tag}",
                                   extra=("--arch", args.arch, "--nvcc", nvcc))
        a_name = _common.register_bekc(built["manifest"], "scale")
        a_ng_name = _common.register_bekc(built["manifest"], "scale", "_nograph", "_ng")
        ref_lib = os.path.join(tmp, "libxla_ffi_scale_cuda.so")
        _common.run([nvcc, "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC",
                     f"-gencode=arch=compute_{sm},code=sm_{sm}", "-I", jax.ffi.include_dir(),
                     os.path.join(_common.HERE, "trivial_xla_ffi.cu"), "-o", ref_lib])
        b_name = _common.register_library(ref_lib, "xla_ffi_scale", f"ovhg_xla_{tag}.scale", "CUDA")

        x = jnp.asarray(np.random.default_rng(0).uniform(0.5, 2, size=args.size).astype(np.float32))
        out = jax.ShapeDtypeStruct(x.shape, x.dtype)
        s = np.float32(0.999)
        fa = jax.ffi.ffi_call(a_name, out)
        fa_ng = jax.ffi.ffi_call(a_ng_name, out)
        fb = jax.ffi.ffi_call(b_name, out)
        raw = {"a": lambda v: fa(v, scale=s), "a_ng": lambda v: fa_ng(v, scale=s),
               "b": lambda v: fb(v, scale=s), "c": lambda v: v * s}
        want = np.asarray(x) * s
        for k, f in raw.items():
            np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), want, rtol=1e-6, err_msg=k)

        per_call = _common.time_per_call({k: jax.jit(f) for k, f in raw.items()}, x, args.calls)
        in_loop = _common.time_in_loop(raw, x, args.loop, args.repeats)

    rows = [("a", "(a) bekc handler"), ("a_ng", "(a') bekc handler, _nograph"),
            ("b", "(b) XLA ffi.h handler"), ("c", "(c) jax.numpy")]
    print(_common.environment(), "|", jax.devices()[0].device_kind)
    print(f"buffer: float32[{args.size}]; per call: median of {args.calls} jitted calls; "
          f"jit loop: fori_loop of {args.loop}, median of {args.repeats} runs")
    _common.print_table(rows, per_call, in_loop, ("a", "b"), "")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"per_call_us": per_call, "loop_us_per_iter": in_loop,
                       "environment": _common.environment(),
                       "device": jax.devices()[0].device_kind, "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
