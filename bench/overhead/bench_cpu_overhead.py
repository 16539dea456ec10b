#!/usr/bin/env python3
"""Per-call overhead of a bekc handler on JAX's cpu platform.

The same trivial kernel (out = x * scale over a small float32 buffer):
  (a) through the handler bekc generates (trivial_bekc.cpp, built by bekc),
  (b) through a handler written with XLA's own xla/ffi/api/ffi.h
      (trivial_xla_ffi.cc, compiled here with g++ against jax.ffi.include_dir()),
  (c) as jax.numpy (x * scale).
Median over --calls single jitted calls (interleaved), and per iteration of a
jitted lax.fori_loop of --loop calls (median of --repeats runs).

    .venv/bin/python bench/overhead/bench_cpu_overhead.py [--calls 10000] [--size 16]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--loop", type=int, default=10000, help="iterations of the jitted fori_loop")
    ap.add_argument("--repeats", type=int, default=15, help="timed runs of the loop")
    ap.add_argument("--size", type=int, default=16, help="elements in the buffer")
    ap.add_argument("--cxx", default=os.environ.get("CXX", "g++"))
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()

    tag = uuid.uuid4().hex[:6]
    with tempfile.TemporaryDirectory(prefix="bekc-bench-") as tmp:
        built = _common.bekc_build(os.path.join(_common.HERE, "trivial_bekc.cpp"),
                                   os.path.join(tmp, "cache"), f"ovh_{tag}")
        bekc_name = _common.register_bekc(built["manifest"], "scale")
        ref_lib = os.path.join(tmp, "libxla_ffi_scale.so")
        _common.run([args.cxx, "-std=c++17", "-O3", "-fPIC", "-shared",
                     "-I", jax.ffi.include_dir(), os.path.join(_common.HERE, "trivial_xla_ffi.cc"),
                     "-o", ref_lib])
        ref_name = _common.register_library(ref_lib, "xla_ffi_scale", f"ovh_xla_{tag}.scale", "cpu")

        x = jnp.asarray(np.random.default_rng(0).uniform(0.5, 2, size=args.size).astype(np.float32))
        out = jax.ShapeDtypeStruct(x.shape, x.dtype)
        s = np.float32(0.999)
        fa = jax.ffi.ffi_call(bekc_name, out)
        fb = jax.ffi.ffi_call(ref_name, out)
        raw = {"a": lambda v: fa(v, scale=s), "b": lambda v: fb(v, scale=s), "c": lambda v: v * s}
        want = np.asarray(x) * s
        for k, f in raw.items():
            np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), want, rtol=1e-6, err_msg=k)

        per_call = _common.time_per_call({k: jax.jit(f) for k, f in raw.items()}, x, args.calls)
        in_loop = _common.time_in_loop(raw, x, args.loop, args.repeats)

    rows = [("a", "(a) bekc handler"), ("b", "(b) XLA ffi.h handler"), ("c", "(c) jax.numpy")]
    print(_common.environment())
    print(f"buffer: float32[{args.size}]; per call: median of {args.calls} jitted calls; "
          f"jit loop: fori_loop of {args.loop}, median of {args.repeats} runs")
    _common.print_table(rows, per_call, in_loop, ("a", "b"), "")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"per_call_us": per_call, "loop_us_per_iter": in_loop,
                       "environment": _common.environment(), "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
