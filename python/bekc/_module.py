"""What ``bekc.load`` returns: a :class:`Module` (one library and its FFI
targets, with brainevent's ``CompiledModule`` interface) and a typed
:class:`KernelFunction` per target, which checks its arrays and attributes
and calls ``jax.ffi.ffi_call``.
"""

from __future__ import annotations

import ctypes
import difflib
from typing import Any, Dict, List, Optional, Sequence

from ._attrs import cast_attr
from ._errors import (BATCHING_AND_GRADIENTS_DOCS, LibraryLoadError, NotBatchableError,
                      NotDifferentiableError)
from ._registry import REGISTRY

# How jax.ffi.ffi_call batches a call under jax.vmap (docs/python.md,
# "Batching and gradients"). JAX also takes the deprecated "legacy_vectorized"
# in a call, but a target's declared method is one of these.
VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


def _suggest(name: str, candidates) -> List[str]:
    """The closest candidate (difflib), else one that contains or is contained in ``name``."""
    close = difflib.get_close_matches(name, candidates, n=1)
    if close:
        return close
    low = name.lower()
    return [c for c in candidates if low and (low in c.lower() or c.lower() in low)][:1]


def _checked_vmap_method(target: str, method: Optional[str]) -> Optional[str]:
    """``method`` if a target may declare it, else ``ValueError`` with the choices."""
    if method is not None and method not in VMAP_METHODS:
        close = _suggest(str(method), VMAP_METHODS)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"{target}: vmap_method {method!r} is not one of "
            f"{', '.join(map(repr, VMAP_METHODS))} (or None){hint} "
            f"(see {BATCHING_AND_GRADIENTS_DOCS})")
    return method


def _varying_axes(typeof, x) -> frozenset:
    """The manual mesh axes ``x`` varies over: ``manual_axis_type.varying``
    (JAX 0.9 and later), ``vma`` (JAX 0.6 to 0.8), else none."""
    try:
        aval = typeof(x)
    except TypeError:  # not an array JAX knows
        return frozenset()
    mat = getattr(aval, "manual_axis_type", None)
    if mat is not None:
        return frozenset(getattr(mat, "varying", ()) or ())
    return frozenset(getattr(aval, "vma", None) or ())


def _varying_like(results, arrays):
    """``results`` marked as varying over every manual mesh axis an input
    varies over. Inside ``jax.shard_map`` (with its default ``check_vma``) an
    ``ffi_call`` result carries no such type, so a loop whose carry goes
    through a kernel would change type between iterations."""
    import jax
    typeof = getattr(jax, "typeof", None)
    if typeof is None:  # a JAX without varying-manual-axes types
        return results
    axes = frozenset().union(*(_varying_axes(typeof, a) for a in arrays))
    if not axes:
        return results
    pcast, pvary = getattr(jax.lax, "pcast", None), getattr(jax.lax, "pvary", None)
    if pcast is None and pvary is None:
        return results

    def mark(r):
        missing = tuple(sorted(axes - _varying_axes(typeof, r), key=str))
        if not missing:
            return r
        return pcast(r, missing, to="varying") if pcast is not None else pvary(r, missing)

    if isinstance(results, (list, tuple)):
        return type(results)(mark(r) for r in results)
    return mark(results)


class KernelFunction:
    """A typed callable for one FFI target of a :class:`Module`.

    ``fn(*arrays, out=None, vmap_method=None, **attrs)`` checks the number of
    arrays, casts each attribute to its manifest type and calls
    ``jax.ffi.ffi_call(target, out, vmap_method=...)(*arrays, **attrs)``.
    ``out`` is a ``jax.ShapeDtypeStruct`` (or a list of them, one per output);
    left out, a one-output function returns an array shaped like its first input.
    ``vmap_method`` left out is the target's own, :attr:`vmap_method`.

    A kernel has no derivative, and none to batch it unless a ``vmap_method``
    says how: ``jax.grad`` raises :class:`~bekc.NotDifferentiableError` and
    ``jax.vmap`` without a method :class:`~bekc.NotBatchableError`, each naming
    the target and docs/python.md, "Batching and gradients".
    """

    # __weakref__: jax.jit(mod.fn) keeps a weak reference to the callable.
    __slots__ = ("target", "name", "function", "platform", "num_args", "num_rets",
                 "attr_types", "_attr_names", "info", "_vmap_method", "__weakref__")

    def __init__(self, target: dict) -> None:
        self.info = target
        self.target = target["name"]
        self.name = target["name"]
        self.function = target["function"]
        self.platform = target["platform"]
        self.num_args = int(target["num_args"])
        self.num_rets = int(target["num_rets"])
        self.attr_types = {a["name"]: a["type"] for a in target["attrs"]}
        self._attr_names = tuple(self.attr_types)
        self._vmap_method: Optional[str] = None

    @property
    def vmap_method(self) -> Optional[str]:
        """How ``jax.vmap`` batches a call that names no ``vmap_method``: one of
        :data:`VMAP_METHODS`, or None (the default: ``jax.vmap`` raises
        :class:`~bekc.NotBatchableError`). An elementwise kernel, whose output
        element i depends only on element i of each input, all of one size,
        takes ``"broadcast_all"``; ``"sequential"`` serves any kernel."""
        return self._vmap_method

    @vmap_method.setter
    def vmap_method(self, method: Optional[str]) -> None:
        self._vmap_method = _checked_vmap_method(self.target, method)

    def __repr__(self) -> str:
        attrs = ", ".join(f"{n}: {t}" for n, t in self.attr_types.items())
        return (f"<bekc function {self.target} ({self.num_args} arrays -> {self.num_rets} "
                f"outputs{'; ' + attrs if attrs else ''}) [{self.platform}]>")

    def cast_attrs(self, attrs: Dict[str, Any]) -> Dict[str, Any]:
        """Check names and cast values; returns the kwargs for ``ffi_call``."""
        types = self.attr_types
        unknown = [k for k in attrs if k not in types]
        if unknown:
            k = unknown[0]
            close = _suggest(k, self._attr_names)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = ", ".join(self._attr_names) or "none"
            raise TypeError(
                f"{self.function}() got an unexpected attribute '{k}'{hint} "
                f"(attributes of {self.target}: {known})")
        missing = [k for k in self._attr_names if k not in attrs]
        if missing:
            raise TypeError(
                f"{self.function}() missing attribute{'s' if len(missing) > 1 else ''} "
                + ", ".join(f"'{m}' ({types[m]})" for m in missing))
        return {k: cast_attr(v, types[k], self.function, k) for k, v in attrs.items()}

    def _out_spec(self, arrays: Sequence[Any], out):
        if out is None:
            if self.num_rets != 1:
                raise TypeError(
                    f"{self.function}() has {self.num_rets} outputs: pass out=[jax.ShapeDtypeStruct"
                    f"(...), ...] with one entry per output")
            if not arrays:
                raise TypeError(
                    f"{self.function}() takes no input arrays, so its output cannot default to "
                    f"the first input's shape: pass out=jax.ShapeDtypeStruct(shape, dtype)")
            import jax
            a = arrays[0]
            shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
            if shape is None or dtype is None:
                import numpy as np
                arr = np.asarray(a)
                shape, dtype = arr.shape, arr.dtype
            return jax.ShapeDtypeStruct(tuple(shape), jax.dtypes.canonicalize_dtype(dtype))
        if isinstance(out, (list, tuple)):
            if len(out) != self.num_rets:
                raise TypeError(
                    f"{self.function}() has {self.num_rets} output{'s' if self.num_rets != 1 else ''}, "
                    f"but out lists {len(out)}")
            return list(out)
        if self.num_rets != 1:
            raise TypeError(
                f"{self.function}() has {self.num_rets} outputs: out must be a list of "
                f"{self.num_rets} jax.ShapeDtypeStruct, got one {type(out).__name__}")
        return out

    def call(self, arrays: Sequence[Any], attrs: Optional[Dict[str, Any]] = None, *,
             out=None, vmap_method: Optional[str] = None, **ffi_call_kwargs):
        """Explicit form of ``__call__`` (useful if an attribute is named ``out``)."""
        arrays = tuple(arrays)
        if len(arrays) != self.num_args:
            raise TypeError(
                f"{self.function}() takes {self.num_args} input array"
                f"{'s' if self.num_args != 1 else ''} ({self.target}), got {len(arrays)}")
        cast = self.cast_attrs(dict(attrs or {}))
        out_spec = self._out_spec(arrays, out)
        self._check_layouts(ffi_call_kwargs, arrays, out_spec)
        import jax
        method = self._vmap_method if vmap_method is None else vmap_method
        call = jax.ffi.ffi_call(self.target, out_spec, vmap_method=method, **ffi_call_kwargs)

        def kernel(*xs):
            return call(*xs, **cast)

        # Only a traced call can be batched or differentiated; an eager call
        # on arrays keeps its plain dispatch.
        if any(isinstance(a, jax.core.Tracer) for a in arrays):
            kernel = self._with_bekc_errors(kernel, method)
        return _varying_like(kernel(*arrays), arrays)

    def _with_bekc_errors(self, kernel, method: Optional[str]):
        """``kernel`` with a derivative rule, and with no method a batching
        rule, that raise bekc's errors in place of JAX's (which name neither
        the kernel's source nor a fix)."""
        import jax
        if method is None:
            kernel = jax.custom_batching.custom_vmap(kernel)
            kernel.def_vmap(self._refuse_vmap)
        kernel = jax.custom_jvp(kernel)
        kernel.defjvp(self._refuse_jvp)
        return kernel

    def _where(self) -> str:
        source = self.info.get("source")
        return f"{self.target} ({source})" if source else self.target

    def _refuse_vmap(self, axis_size, in_batched, *args):
        f = self.function
        raise NotBatchableError(
            f"jax.vmap cannot batch {self._where()}: it has no vmap_method. Declare how, "
            f"once: mod.{f}.vmap_method = \"broadcast_all\" for an elementwise kernel (each "
            f"output element depends only on the same element of every input), or "
            f"\"sequential\" for any kernel (one call per batch element); or "
            f"bekc.load(..., vmap_method={{\"{f}\": ...}}); or mod.{f}(..., vmap_method=...) "
            f"for one call. See {BATCHING_AND_GRADIENTS_DOCS}",
            target=self.target, function=f)

    def _refuse_jvp(self, primals, tangents):
        raise NotDifferentiableError(
            f"JAX cannot differentiate {self._where()}: a bekc kernel has no derivative "
            f"rule. Give the call one with jax.custom_vjp (a backward function, often "
            f"another kernel) or jax.custom_jvp, or make the kernel a "
            f"bekc.XLACustomKernel with rules (bekc.defjvp and def_transpose_rule). "
            f"See {BATCHING_AND_GRADIENTS_DOCS}",
            target=self.target, function=self.function)

    def _check_layouts(self, kwargs: Dict[str, Any], arrays, out_spec) -> None:
        """BE::Tensor reads every buffer as row-major, and XLA's buffers carry no
        layout the handler could check: another layout would be read transposed
        without a word, so only row-major ones (or None) are passed on. In
        jax.ffi.ffi_call's spelling (major-to-minor) row-major is (0, 1, ..., n-1)."""
        outs = out_spec if isinstance(out_spec, (list, tuple)) else [out_spec]
        for key, values in (("input_layouts", arrays), ("output_layouts", outs)):
            layouts = kwargs.get(key)
            if layouts is None:
                continue
            for i, (layout, value) in enumerate(zip(layouts, values)):
                ndim = len(getattr(value, "shape", ()))
                if layout is not None and tuple(layout) != tuple(range(ndim)):
                    raise ValueError(
                        f"{self.target}: {key}[{i}] = {tuple(layout)} is not row-major; "
                        f"BE::Tensor reads every buffer as row-major (C order), so pass "
                        f"None or {tuple(range(ndim))}")

    def __call__(self, *arrays, **kwargs):
        out = kwargs.pop("out", None) if "out" not in self.attr_types else None
        vmap_method = (kwargs.pop("vmap_method", None)
                       if "vmap_method" not in self.attr_types else None)
        return self.call(arrays, kwargs, out=out, vmap_method=vmap_method)


class Module:
    """A loaded bekc build: one library and its FFI targets.

    ``mod.<function>(*arrays, out=None, vmap_method=None, **attrs)`` calls a
    target (see :class:`KernelFunction`; :meth:`set_vmap_method` declares how
    ``jax.vmap`` batches the targets); ``mod["function"]`` or
    ``mod["prefix.function"]`` works for any name, including a function whose
    name is also an attribute of the module (``mod["path"]``). ``mod.targets``
    maps target names to their manifest entries, ``mod.manifest`` is the parsed
    manifest.

    brainevent's ``CompiledModule`` interface is here too: ``path`` (the
    library), ``function_names``, ``content_hash`` (``"sha256:"`` and the first
    16 hex digits of the library's SHA-256) and ``get_handler(name)`` (a ctypes
    function pointer to the function's FFI handler).
    """

    def __init__(self, manifest: dict, manifest_path: str, library_path: str,
                 library_sha256: str, library: ctypes.CDLL) -> None:
        self.manifest = manifest
        self.manifest_path = manifest_path
        self.library_path = library_path
        self.library_sha256 = library_sha256
        self.library = library  # the ctypes handle (kept alive by the registry too)
        self.name = manifest.get("name", "")
        self.targets = {t["name"]: t for t in manifest["targets"]}
        self.functions = {t["function"]: KernelFunction(t) for t in manifest["targets"]}
        self.platforms = tuple(sorted({t["platform"] for t in manifest["targets"]}))
        self.registered = False
        self._handlers: Dict[str, Any] = {}

    # -- brainevent's CompiledModule ------------------------------------------
    @property
    def path(self) -> str:
        """The shared library's path (brainevent's ``CompiledModule.path``)."""
        return self.library_path

    @property
    def function_names(self) -> List[str]:
        """The user function names, in manifest order."""
        return list(self.functions)

    @property
    def content_hash(self) -> str:
        """``"sha256:"`` plus the first 16 hex digits of the library's SHA-256,
        brainevent's format (the hash was checked against the manifest at load)."""
        return "sha256:" + self.library_sha256[:16]

    def get_handler(self, name: str):
        """The ctypes function pointer of function ``name``'s FFI handler.

        It is the symbol the manifest names for the function (the one that is
        registered), typed ``void* (void*)`` as in brainevent, so
        ``jax.ffi.pycapsule(mod.get_handler(name))`` works. ``KeyError`` lists
        the available names when ``name`` is not a function of this module.
        """
        fn = self._handlers.get(name)
        if fn is not None:
            return fn
        kernel = self.functions.get(name)
        if kernel is None:
            raise KeyError(f"function {name!r} not found in bekc module {self.name!r}; "
                           f"available: {list(self.functions)}")
        symbol = kernel.info["symbol"]
        try:
            fn = self.library[symbol]  # a new pointer object: the CDLL's cache stays untyped
        except AttributeError:
            raise LibraryLoadError(
                f"bekc library {self.library_path} has no symbol {symbol!r} (function "
                f"{name!r}); the manifest and library do not belong together") from None
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_void_p]
        self._handlers[name] = fn
        return fn

    # -- registration ---------------------------------------------------------
    def register(self, *, replace: bool = False) -> "Module":
        """Register every target with JAX (no-op for those already registered).

        ``replace=True`` is accepted for brainevent's sake; a target registered
        from a different library still raises :class:`~bekc.TargetConflictError`.
        """
        REGISTRY.register(self, replace)
        return self

    def set_vmap_method(self, method) -> "Module":
        """Declares how ``jax.vmap`` batches the targets' calls
        (:attr:`KernelFunction.vmap_method`): a method name (or None) for every
        target, or a mapping from function (or target) names to methods, the
        others left as they are; nothing changes when one is wrong. Returns the
        module."""
        if method is None or isinstance(method, str):
            chosen = {fn: method for fn in self.functions.values()}
        elif hasattr(method, "items"):
            chosen = {}
            for name, m in method.items():
                if name not in self:
                    raise ValueError(f"vmap_method names {name!r}: {self._unknown(name)}")
                chosen[self[name]] = m
        else:
            raise TypeError(f"vmap_method must be a string, None or a mapping of function "
                            f"names to strings, got {type(method).__name__}")
        checked = {fn: _checked_vmap_method(fn.target, m) for fn, m in chosen.items()}
        for fn, m in checked.items():
            fn._vmap_method = m
        return self

    # -- access ---------------------------------------------------------------
    def __getitem__(self, name: str) -> KernelFunction:
        fn = self.functions.get(name)
        if fn is None and name in self.targets:
            fn = self.functions[self.targets[name]["function"]]
        if fn is None:
            raise KeyError(self._unknown(name))
        return fn

    # Only reached when normal lookup fails, so the attributes and methods above
    # always win over a function of the same name (reach that one as mod["name"]).
    def __getattr__(self, name: str) -> KernelFunction:
        if name.startswith("__") or "functions" not in self.__dict__:
            raise AttributeError(name)
        fn = self.functions.get(name)
        if fn is None:
            raise AttributeError(self._unknown(name))
        return fn

    def _unknown(self, name: str) -> str:
        close = _suggest(name, list(self.functions))
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return (f"bekc module {self.name!r} has no function {name!r}{hint} "
                f"(functions: {', '.join(sorted(self.functions)) or 'none'})")

    def __contains__(self, name: str) -> bool:
        return name in self.functions or name in self.targets

    def __iter__(self):
        return iter(self.functions.values())

    def __len__(self) -> int:
        return len(self.functions)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.functions))

    def __repr__(self) -> str:
        state = "" if self.registered else ", not registered"
        n = len(self.targets)
        return (f"<bekc.Module {self.name!r}: {n} target{'s' if n != 1 else ''} "
                f"[{', '.join(self.platforms) or '-'}], path={self.library_path!r}, "
                f"functions={self.function_names}{state}>")
