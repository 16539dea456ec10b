import inspect, sys, os
import numba, numpy as np
from numba import cuda
print("numba", numba.__version__)
try:
    import numba_cuda; print("numba_cuda", numba_cuda.__version__, numba_cuda.__file__)
except Exception as e: print("no numba_cuda module", e)
import jax; print("jax", jax.__version__, jax.devices())
from numba.cuda import dispatcher
print("dispatcher file", dispatcher.__file__)
@cuda.jit
def add(x, y, out):
    i = cuda.grid(1)
    if i < out.size: out[i] = x[i] + y[i]
from numba import types
sig = (types.Array(types.float32, 1, 'C'),)*3
k = add.compile(sig)
print("compile returns", type(k), [a for a in dir(k) if not a.startswith('__')])
print("overloads keys", list(add.overloads.keys()))
src = inspect.getsource(type(k))
open(os.environ["OUT"]+"/kernel_class.py","w").write(src)
open(os.environ["OUT"]+"/dispatcher.py","w").write(inspect.getsource(dispatcher))
from numba.cuda.cudadrv import driver
open(os.environ["OUT"]+"/driver.py","w").write(inspect.getsource(driver))
try:
    lib = k._codelibrary
    print("codelib", type(lib))
    f = lib.get_cufunc()
    print("cufunc", type(f), [a for a in dir(f) if not a.startswith('__')])
    print("handle", type(f.handle), f.handle)
    try: print("int handle", int(f.handle))
    except Exception as e: print("int fail", e)
    try: print("value", f.handle.value)
    except Exception as e: print("value fail", e)
    open(os.environ["OUT"]+"/codegen.py","w").write(inspect.getsource(type(lib)))
except Exception as e:
    import traceback; traceback.print_exc()
print("debug", getattr(k, "debug", None), "cooperative", getattr(k, "cooperative", None), "extensions", getattr(k, "extensions", None))
s = cuda.default_stream(); print("ext stream", cuda.external_stream)
print("driver binding", getattr(driver, "USE_NV_BINDING", None), getattr(numba.cuda.config if hasattr(numba.cuda,'config') else numba.config, "CUDA_USE_NVIDIA_BINDING", None))
ctx = cuda.current_context(); print("ctx", ctx, ctx.handle)
