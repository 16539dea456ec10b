"""Numba-CUDA kernels as JAX custom calls.

``numba_cuda_kernel(kernel, outs, grid=..., block=...)`` wraps one
``@cuda.jit`` kernel. The kernel is compiled by Numba once per input
signature; each call then goes through ``libbekc_numba`` (built with bekc,
``runtime/numba/bekc_numba.cpp``), whose handler passes XLA's buffers in the
layout Numba's kernels take and launches the kernel with ``cuLaunchKernel`` on
XLA's stream. No Python runs per call, and the handler reports XLA's
command-buffer trait, so calls inside ``jax.lax`` loops can be captured in CUDA
graphs.

``numba_cuda_callable(fn, outs)`` wraps a Python function that receives Numba
device arrays (zero-copy views of XLA's buffers) and XLA's stream. The call
frame is decoded in compiled code; Python gets the device pointers.

The launch configuration is read in ``_numba_launch``, and the library is
found and driven through ctypes in ``_numba_native``.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._errors import BekcError
from ._numba_launch import _check_forms, resolve_launch
# One lock, the library's: it also guards the entry tables below.
from ._numba_native import _LOCK, CALL_TARGET, LAUNCH_TARGET, _native, find_numba_library

__all__ = ["numba_cuda_kernel", "numba_cuda_callable", "resolve_launch", "find_numba_library",
           "NotAKernelError", "UnsupportedDtypeError", "LAUNCH_TARGET", "CALL_TARGET"]

# The XLA element types (xla_ffi_abi.h) a Numba array can hold.
_XLA_DTYPES = {
    "bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint8": 6, "uint16": 7,
    "uint32": 8, "uint64": 9, "float16": 10, "float32": 11, "float64": 12,
    "complex64": 15, "complex128": 18,
}


class NotAKernelError(BekcError, TypeError, AssertionError):
    """The object given is not a ``@numba.cuda.jit`` kernel.

    Also an ``AssertionError``, which is what brainevent raises for this.
    """


class UnsupportedDtypeError(BekcError, TypeError, ValueError):
    """An input or output has a dtype Numba-CUDA arrays cannot hold (bfloat16).

    A ``TypeError``, as bekc documents, and a ``ValueError``, which is what
    brainevent raises for a bfloat16 input or output.
    """


# vmap methods under which ffi_call hands the handler buffers with one leading
# batch axis; "sequential" calls the unbatched function once per slice instead.
_BATCHING_VMAP_METHODS = ("expand_dims", "broadcast_all")


# --------------------------------------------------------------------------- Numba
def _numba_cuda():
    """``numba.cuda``, or ImportError saying what to install."""
    import numpy as np
    # numba-cuda up to at least 0.30 names np.row_stack at import time, which
    # NumPy 2.5 removed; it was always an alias of np.vstack.
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    try:
        from numba import cuda
    except ImportError as e:
        raise ImportError("bekc.numba_cuda_kernel needs Numba with CUDA support: "
                          "pip install numba-cuda") from e
    return cuda


def _check_kernel(kernel) -> None:
    cuda = _numba_cuda()
    from numba.cuda.dispatcher import CUDADispatcher
    if not isinstance(kernel, CUDADispatcher):
        kind = type(kernel).__name__
        hint = (" (a plain Python function: decorate it with @numba.cuda.jit)"
                if callable(kernel) else "")
        raise NotAKernelError(
            f"numba_cuda_kernel expects a @numba.cuda.jit kernel, got {kind}{hint}")
    del cuda


def _handle_value(handle) -> int:
    value = getattr(handle, "value", None)  # a ctypes c_void_p (Numba's ctypes binding)
    return int(value if value is not None else handle)  # cuda.bindings CUfunction / CUkernel


def _flatten_outs(outs):
    import jax
    leaves, tree = jax.tree_util.tree_flatten(outs)
    if not leaves:
        raise ValueError("outs must hold at least one jax.ShapeDtypeStruct")
    specs = []
    for o in leaves:
        if not (hasattr(o, "shape") and hasattr(o, "dtype")):
            raise TypeError(f"outs must be jax.ShapeDtypeStruct values (shape and dtype), got "
                            f"{type(o).__name__}")
        specs.append(jax.ShapeDtypeStruct(tuple(o.shape), o.dtype))
    return specs, tree


def _signature(args, specs) -> Tuple[Tuple[str, int], ...]:
    import numpy as np
    sig = []
    for a in list(args) + list(specs):
        dtype = np.dtype(a.dtype)
        sig.append((dtype.name, len(a.shape)))
    return tuple(sig)


def _xla_dtype(name: str, where: str) -> int:
    try:
        return _XLA_DTYPES[name]
    except KeyError:
        hint = "; cast it to float16 or float32" if name == "bfloat16" else ""
        raise UnsupportedDtypeError(
            f"{where} has dtype {name}, which Numba-CUDA arrays cannot hold (supported: "
            f"{', '.join(_XLA_DTYPES)}){hint}") from None


def _as_arrays(args):
    import jax.numpy as jnp
    return [a if hasattr(a, "shape") and hasattr(a, "dtype") else jnp.asarray(a) for a in args]


def _kernel_name(kernel) -> str:
    fn = getattr(kernel, "py_func", kernel)
    return getattr(fn, "__qualname__", None) or repr(kernel)


# Library entries, shared by every wrapper: wrapping the same kernel or
# function again (a kernel generator does so on each trace) reuses its entries
# rather than adding ones that live as long as the process. A key starts with
# the id() of the kernel or function, which _PINNED keeps alive so that no
# other object can take over its id.
_LAUNCH_ENTRIES: Dict[tuple, int] = {}
_CALL_ENTRIES: Dict[tuple, int] = {}
_PINNED: Dict[int, Any] = {}


class _EntryCall:
    """What numba_cuda_kernel and numba_cuda_callable return: a function of
    arrays that calls ``target`` with the library entry for the arrays'
    layout, made once per layout by ``_make_entry``."""

    target = ""
    _entries: Dict[tuple, int] = {}

    def __init__(self, owner, name: str, outs, vmap_method, aliases) -> None:
        self._owner = owner
        self.name = name
        self.specs, self.tree = _flatten_outs(outs)
        self.vmap_method = vmap_method
        self.aliases = dict(aliases) if aliases else None
        self._ids: Dict[Any, int] = {}  # this wrapper's entries, by key

    def _dtypes(self, arrays) -> List[int]:
        """The XLA dtypes of the inputs, then the outputs; UnsupportedDtypeError
        naming the first one Numba cannot hold."""
        import numpy as np
        n = len(arrays)
        return [_xla_dtype(np.dtype(a.dtype).name,
                           f"{self.name}: {f'input {i}' if i < n else f'output {i - n}'}")
                for i, a in enumerate(list(arrays) + list(self.specs))]

    def _key(self, arrays):
        """The entry key for these arrays, or None when there is nothing to launch."""
        raise NotImplementedError

    def _make_entry(self, key, arrays) -> int:
        raise NotImplementedError

    def _entry(self, key, arrays) -> int:
        shared = (id(self._owner),) + tuple(key)
        with _LOCK:
            id_ = self._entries.get(shared)
            if id_ is None:
                id_ = self._make_entry(key, arrays)
                _PINNED[id(self._owner)] = self._owner
                self._entries[shared] = id_
            self._ids[key] = id_
            return id_

    def __call__(self, *args):
        import jax
        import numpy as np
        arrays = _as_arrays(args)
        key = self._key(arrays)
        if key is None:
            import jax.numpy as jnp
            out = [jnp.zeros(s.shape, s.dtype) for s in self.specs]
        else:
            id_ = self._entry(key, arrays)
            kwargs = {"vmap_method": self.vmap_method}
            if self.aliases:
                kwargs["input_output_aliases"] = self.aliases
            out = jax.ffi.ffi_call(self.target, self.specs, **kwargs)(*arrays,
                                                                      bekc_id=np.int64(id_))
        return jax.tree_util.tree_unflatten(self.tree, list(out))


class _NumbaKernelCall(_EntryCall):
    """The callable :func:`numba_cuda_kernel` returns."""

    target = LAUNCH_TARGET
    _entries = _LAUNCH_ENTRIES

    def __init__(self, kernel, outs, grid, block, shared_mem, vmap_method, aliases) -> None:
        super().__init__(kernel, _kernel_name(kernel), outs, vmap_method, aliases)
        self.kernel = kernel
        self.grid, self.block = grid, block
        self.shared_mem = int(shared_mem)
        if self.shared_mem < 0:
            raise ValueError(f"shared_mem must be >= 0, got {shared_mem!r}")
        # launch_dims of 0 in some dimension: nothing to launch, outputs are 0.
        self.empty = 0 in grid
        # Under jax.vmap the handler launches once per batch slice.
        self.batched = vmap_method in _BATCHING_VMAP_METHODS

    def __repr__(self) -> str:
        return f"<bekc numba_cuda_kernel {self.name} grid={self.grid} block={self.block}>"

    def _key(self, arrays):
        for i, a in enumerate(arrays):
            if len(a.shape) == 0:
                raise ValueError(
                    f"{self.name}: input {i} is a 0-d array (a scalar), which numba_cuda_kernel "
                    f"does not take; pass it as a 1-d array of one element, e.g. "
                    f"jnp.array([value]) or x.reshape(1)")
        self._dtypes(arrays)  # refuse what Numba cannot hold before importing it
        if self.empty:
            return None
        return _signature(arrays, self.specs) + ((self.grid, self.block, self.shared_mem,
                                                  self.batched),)

    def _make_entry(self, key, arrays) -> int:
        sig = key[:-1]
        dtypes = self._dtypes(arrays)
        cuda = _numba_cuda()
        native = _native()
        import numpy as np
        from numba import from_dtype, types
        numba_sig = tuple(types.Array(from_dtype(np.dtype(name)), ndim, "C") for name, ndim in sig)
        compiled = self.kernel.compile(numba_sig)
        if getattr(compiled, "debug", False):
            raise BekcError(
                f"{self.name} was compiled with debug=True: its device-side exceptions are "
                f"read back by Numba's own launcher, so launch it from numba_cuda_callable")
        if getattr(compiled, "extensions", None):
            raise BekcError(f"{self.name} has Numba launch extensions, which bekc cannot apply")
        library = getattr(compiled, "library", None) or compiled._codelibrary
        with cuda.gpus[0]:
            handle = _handle_value(library.get_cufunc().handle)
        return native.add_launch(self.name, handle, self.grid, self.block, self.shared_mem,
                                 bool(getattr(compiled, "cooperative", False)), dtypes,
                                 [ndim for _, ndim in sig], len(arrays), vmap=self.batched)

    def launch_stats(self) -> Dict[str, int]:
        """How many launches the compiled handler made, over every signature,
        and how many of them went into a CUDA graph being captured (a captured
        launch replays without calling the handler again). Wrappers of the same
        kernel and launch configuration share entries, and so these counts."""
        native = _native()
        launches = captured = 0
        for id_ in list(self._ids.values()):
            n, c = native.launch_stats(id_)
            launches, captured = launches + n, captured + c
        return {"launches": launches, "captured": captured}

    def launch_streams(self) -> List[int]:
        """The CUDA stream (a ``CUstream`` as an int) of the latest launch of
        each signature this function launched; XLA's stream, which a
        ``numba_cuda_callable`` in the same computation also receives."""
        native = _native()
        return [native.launch_stream(id_) for id_ in list(self._ids.values())]


def numba_cuda_kernel(kernel, outs, *, grid=None, block=None, launch_dims=None,
                      threads_per_block: int = 256, shared_mem: int = 0,
                      vmap_method: Optional[str] = None,
                      input_output_aliases: Optional[Dict[int, int]] = None) -> Callable:
    """A JAX-callable function from one ``@numba.cuda.jit`` kernel.

    The kernel takes the inputs, then the outputs, as arrays, and writes the
    outputs in place. ``outs`` is a ``jax.ShapeDtypeStruct`` or a pytree of
    them; the result has the same structure. Either ``grid`` and ``block`` or
    ``launch_dims`` configure the launch (see :func:`resolve_launch`);
    ``shared_mem`` is the dynamic shared memory in bytes. ``vmap_method`` and
    ``input_output_aliases`` go to ``jax.ffi.ffi_call``. Under ``jax.vmap``
    with ``vmap_method="expand_dims"`` or ``"broadcast_all"`` the kernel is
    launched once per batch slice, with the unbatched launch configuration.

    Mistakes are reported in brainevent's order: the launch configuration
    (ValueError), the outputs' dtypes, then the kernel's type (TypeError).

    Numba compiles the kernel once per input signature (dtypes and ranks) on
    first use; calls inside ``jax.jit`` then run no Python.
    """
    explicit = _check_forms(grid, block, launch_dims)
    if explicit and vmap_method is not None and vmap_method != "sequential":
        raise ValueError(
            f"vmap_method={vmap_method!r} needs launch_dims: an explicit grid and block are "
            f"fixed, so bekc cannot give each batch slice its own launch. Pass launch_dims, or "
            f"vmap_method='sequential' (one unbatched call per slice)")
    g, b = resolve_launch(grid, block, launch_dims, threads_per_block)
    import numpy as np
    name = _kernel_name(kernel)
    specs, _ = _flatten_outs(outs)
    for i, spec in enumerate(specs):
        _xla_dtype(np.dtype(spec.dtype).name, f"{name}: output {i}")
    _check_kernel(kernel)
    return _NumbaKernelCall(kernel, outs, g, b, shared_mem, vmap_method, input_output_aliases)


# --------------------------------------------------------------------------- callables
class _NumbaCallable(_EntryCall):
    """The callable :func:`numba_cuda_callable` returns."""

    target = CALL_TARGET
    _entries = _CALL_ENTRIES

    def __init__(self, fn, outs, vmap_method, aliases) -> None:
        if not callable(fn):
            raise TypeError(f"numba_cuda_callable expects a Python callable, got "
                            f"{type(fn).__name__}")
        super().__init__(fn, getattr(fn, "__qualname__", None) or repr(fn), outs, vmap_method,
                         aliases)
        self.fn = fn

    def __repr__(self) -> str:
        return f"<bekc numba_cuda_callable {self.name}>"

    def _key(self, arrays):
        import numpy as np
        self._dtypes(arrays)
        return tuple((tuple(int(d) for d in a.shape), np.dtype(a.dtype).str)
                     for a in list(arrays) + list(self.specs))

    def _make_entry(self, layouts, arrays) -> int:
        cuda = _numba_cuda()
        native = _native()
        fn = self.fn
        interfaces = [{"shape": shape, "typestr": typestr, "strides": None, "version": 3}
                      for shape, typestr in layouts]
        streams: Dict[int, Any] = {}

        def callback(_id, pointers, count, stream, error, error_size):
            try:
                arrays = []
                for i in range(count):
                    desc = dict(interfaces[i])
                    desc["data"] = (pointers[i], False)
                    arrays.append(cuda.from_cuda_array_interface(desc, owner=None, sync=False))
                s = streams.get(stream or 0)
                if s is None:
                    s = streams[stream or 0] = (cuda.external_stream(stream) if stream
                                                else cuda.default_stream())
                fn(*arrays, s)
                return 0
            except BaseException as e:  # noqa: BLE001 - reported to XLA, then to the caller
                message = f"{type(e).__name__}: {e}".encode(errors="replace")
                message = message[: max(0, error_size - 1)]
                ctypes.memmove(error, message, len(message))
                ctypes.memset(error + len(message), 0, 1)
                return 1

        n = len(arrays)
        return native.add_callable(self.name, callback, n, len(layouts) - n)


def numba_cuda_callable(fn, outs, *, vmap_method: Optional[str] = None,
                        input_output_aliases: Optional[Dict[int, int]] = None) -> Callable:
    """A JAX-callable function from a Python function that launches Numba kernels.

    ``fn(*inputs, *outputs, stream)`` receives Numba device arrays that view
    XLA's buffers (no copy) and XLA's stream as a Numba stream; it may launch
    several kernels on that stream and allocate temporaries. ``outs`` is a
    ``jax.ShapeDtypeStruct`` or a pytree of them. An exception raised by
    ``fn`` becomes an error of the JAX call that ran it.
    """
    return _NumbaCallable(fn, outs, vmap_method, input_output_aliases)
