# Which XLA_FLAGS put a bekc numba launch (and a bekc C++ handler) into CUDA graphs?
import os, sys, time
flags = sys.argv[1] if len(sys.argv) > 1 else ""
os.environ["XLA_FLAGS"] = flags
import jax, jax.numpy as jnp, numpy as np
import bekc
from bekc._numba_cuda import _numba_cuda
cuda = _numba_cuda()
@cuda.jit
def inc(x, out):
    i = cuda.grid(1)
    if i < out.size: out[i] = x[i] + 1
n = 10000
step = bekc.numba_cuda_kernel(inc, outs=jax.ShapeDtypeStruct((n,), jnp.float32), launch_dims=n)
loop = jax.jit(lambda x: jax.lax.fori_loop(0, 1000, lambda i, v: step(v), x))
x = jnp.zeros(n, jnp.float32)
jax.block_until_ready(loop(x)); s0 = step.launch_stats()
t = time.perf_counter(); jax.block_until_ready(loop(x)); dt = time.perf_counter() - t
s1 = step.launch_stats()
hlo = loop.lower(x).compile().as_text()
print(f"FLAGS={flags!r}: 1st run {s0}, 2nd run adds launches={s1['launches']-s0['launches']} captured={s1['captured']-s0['captured']}, {dt*1e3:.2f} ms, 'command_buffer' in hlo: {'command_buffer' in hlo}")
if os.environ.get("DUMP"):
    print(hlo[:3000])
