"""A JAX primitive with one implementation per platform (``XLACustomKernel``).

One name, several implementations: a Numba-CUDA kernel or a bekc-built CUDA
target for GPUs, a bekc-built ``.cpp`` target for CPUs. JAX lowers the
primitive with the implementation registered for the platform it compiles
for, so the same call works under ``jax.jit`` on either::

    op = bekc.XLACustomKernel("my_project.leaky_relu")
    op.def_numba_cuda_kernel(generator)     # generator(**kwargs) -> fn(*arrays)
    op.def_cpu_kernel(cpu_module.leaky_relu)
    y, = op(x, outs=[jax.ShapeDtypeStruct(x.shape, x.dtype)], alpha=0.1)

A *kernel generator* receives the call's keyword arguments (``outs`` included,
as a list of ``jax.ShapeDtypeStruct``) and returns a function of the input
arrays, as in brainevent. A bekc function (``bekc.load(...).fn``) may be given
instead: it is called with ``out=outs`` and the other keyword arguments as its
attributes.

As in brainevent, the primitive's transformation rules go into JAX's own
tables: ``def_jvp_rule``/``def_jvp_rule2`` (``jax.jvp``, ``jax.grad``),
``def_transpose_rule`` (``jax.grad`` of what is linear) and
``def_batching_rule`` (``jax.vmap``, which works from the start through
:func:`bekc.general_batching_rule`). ``def_call``, ``def_benchmark_data`` and
``benchmark`` time the backends against each other (``_benchmark.py``).

The backend of a call is, first to last: the call's ``backend=``, the global
one (:func:`set_backend`), the primitive's default (:meth:`set_default`, or
the first registered). Changing either default clears JAX's caches, so calls
already compiled pick the new backend on their next run, as in brainevent.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ._errors import BekcError

__all__ = ["XLACustomKernel", "KernelEntry", "KernelCompilationError",
           "KernelFallbackExhaustedError", "set_backend", "get_backend", "clear_backends"]

# brainevent's platform names, and the JAX lowering platform of each. bekc's
# GPU kernels are CUDA kernels, so 'gpu' lowers for CUDA only.
_LOWERING_PLATFORM = {"cpu": "cpu", "gpu": "cuda", "tpu": "tpu"}
_PLATFORM_ALIASES = {"cuda": "gpu"}


class KernelFallbackExhaustedError(BekcError, RuntimeError):
    """No registered kernel fits the call: none for its platform, or not the
    backend the call asked for."""


class KernelCompilationError(BekcError, RuntimeError):
    """The chosen backend's kernel generator, or the kernel it returned,
    raised while JAX lowered the call. The original error is ``__cause__``."""


# A wrapped TypeError or ValueError stays one, so that ``except ValueError``
# around a call still catches, say, a dtype that a generator refuses.
class KernelCompilationTypeError(KernelCompilationError, TypeError):
    pass


class KernelCompilationValueError(KernelCompilationError, ValueError):
    pass


_KEPT_KINDS = ((TypeError, KernelCompilationTypeError), (ValueError, KernelCompilationValueError))


def _compilation_error(message: str, cause: BaseException) -> KernelCompilationError:
    for kind, cls in _KEPT_KINDS:
        if isinstance(cause, kind):
            return cls(message)
    return KernelCompilationError(message)


def _platform_name(platform: str) -> str:
    return _PLATFORM_ALIASES.get(platform, platform)


# -- global backends ----------------------------------------------------------------------
_GLOBAL_BACKENDS: Dict[str, str] = {}


def _clear_jax_caches() -> None:
    # Backends are chosen while lowering, and JAX caches lowered and compiled
    # calls without them in the key: clearing makes every call site choose again.
    import jax
    jax.clear_caches()


def set_backend(platform: str, backend: Optional[str]) -> None:
    """Makes ``backend`` the backend of every XLACustomKernel that has one of
    that name for ``platform``; ``None`` removes the global choice. Primitives
    without it warn once and use their own default. A call's ``backend=``
    still wins."""
    if backend == "":
        raise ValueError("set_backend: backend cannot be an empty string; pass None to go "
                         "back to each primitive's default")
    platform = _platform_name(platform)
    if _GLOBAL_BACKENDS.get(platform) == backend:
        return
    if backend is None:
        del _GLOBAL_BACKENDS[platform]
    else:
        _GLOBAL_BACKENDS[platform] = backend
    _clear_jax_caches()


def get_backend(platform: str) -> Optional[str]:
    """The global backend of ``platform``, or ``None``."""
    return _GLOBAL_BACKENDS.get(_platform_name(platform))


def clear_backends() -> None:
    """Removes every global backend: each primitive uses its own default."""
    if _GLOBAL_BACKENDS:
        _GLOBAL_BACKENDS.clear()
        _clear_jax_caches()


# Every XLACustomKernel by name, so that a second one of a name can warn.
_PRIMITIVES: Dict[str, "XLACustomKernel"] = {}


@dataclass
class KernelEntry:
    backend: str
    platform: str
    kernel_generator: Callable[..., Callable]


def _from_bekc_function(fn) -> Callable[..., Callable]:
    """A kernel generator that calls a bekc KernelFunction."""
    def generator(outs, **attrs):
        def kernel(*arrays):
            return fn(*arrays, out=list(outs), **attrs)
        return kernel
    generator.__name__ = f"bekc:{fn.target}"
    return generator


def _is_tracer(value) -> bool:
    import jax
    return isinstance(value, jax.core.Tracer)


def _shaped_array(shape, dtype):
    try:
        from jax.core import ShapedArray
    except ImportError:  # pragma: no cover - JAX releases that moved it
        from jax._src.core import ShapedArray
    return ShapedArray(tuple(shape), dtype)


def _check_kwarg(name: str, key: str, value) -> None:
    """Keyword arguments reach the generator at trace time and JAX keeps them
    in its cache keys: they must be hashable Python values."""
    import jax
    if any(_is_tracer(leaf) for leaf in jax.tree_util.tree_leaves(value)):
        raise TypeError(
            f"{name}: keyword argument {key!r} is a traced value, but kernel generators "
            f"need it as a Python value at trace time. Under jax.jit, mark it static "
            f"(jax.jit(f, static_argnames=({key!r},))) or pass it as an input array")
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"{name}: keyword argument {key!r} is a {type(value).__name__}, which is "
            f"unhashable; keyword arguments must be hashable, since JAX keeps them in its "
            f"cache keys (use a tuple instead of a list)") from None


def _check_outputs(name: str, chosen: str, platform: str, result, outs) -> List:
    if not isinstance(result, (list, tuple)):
        result = [result]
    if len(result) != len(outs):
        raise BekcError(f"{name}: the {chosen} kernel for {platform} returned "
                        f"{len(result)} arrays; outs lists {len(outs)}")
    for i, (r, o) in enumerate(zip(result, outs)):
        shape, dtype = tuple(getattr(r, "shape", ())), getattr(r, "dtype", None)
        if shape != tuple(o.shape) or dtype != o.dtype:
            raise BekcError(f"{name}: the {chosen} kernel for {platform} returned "
                            f"output {i} as {dtype}{list(shape)}; outs says "
                            f"{o.dtype}{list(o.shape)}")
    return list(result)


class XLACustomKernel:
    """A custom JAX primitive whose implementation depends on the platform."""

    def __init__(self, name: str, doc: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"XLACustomKernel needs a non-empty name, got {name!r}")
        from jax.extend.core import Primitive
        from jax._src import dispatch
        if name in _PRIMITIVES:
            warnings.warn(f"an XLACustomKernel named {name!r} is already registered; the new "
                          f"one replaces it in bekc's table of primitives. Give each its own "
                          f"name", UserWarning, stacklevel=2)
        _PRIMITIVES[name] = self
        self.name = name
        self.primitive = Primitive(name)
        self.primitive.multiple_results = True
        self.primitive.def_impl(functools.partial(dispatch.apply_primitive, self.primitive))
        self.primitive.def_abstract_eval(self._abstract_eval)
        if doc is not None:
            self.__doc__ = doc
        self._kernels: Dict[str, Dict[str, KernelEntry]] = {}
        self._defaults: Dict[str, str] = {}
        self._warned_backends: set = set()
        # What def_call, def_tags and def_benchmark_data record (see benchmark).
        self._call_fn: Optional[Callable] = None
        self._tags: set = set()
        self._benchmark_data_fn: Optional[Callable] = None
        # jax.vmap works from the start, as in brainevent (def_batching_rule replaces it).
        self.register_general_batching()
        # Every platform lowers from the start, so one without a kernel says so
        # (KernelFallbackExhaustedError) instead of JAX's "no lowering rule".
        for platform in _LOWERING_PLATFORM:
            self._register_lowering(platform)

    def __repr__(self) -> str:
        impls = ", ".join(f"{p}: {', '.join(b)}" for p, b in self._kernels.items()) or "none"
        return f"<bekc XLACustomKernel {self.name} ({impls})>"

    @staticmethod
    def _abstract_eval(*avals, outs, **kwargs):
        return tuple(outs)

    def _warn_backend_once(self, message: str) -> None:
        """Warns with ``message`` (a UserWarning) the first time only: backends
        are chosen on every lowering, and one situation needs one warning."""
        if message in self._warned_backends:
            return
        self._warned_backends.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)

    # -- registration -----------------------------------------------------------------
    def def_kernel(self, backend: str, platform: str, kernel, asdefault: bool = False) -> None:
        """Registers ``kernel`` (a kernel generator, or a bekc function) as
        ``backend`` for ``platform`` ('cpu', 'gpu' or 'cuda', 'tpu'). The first
        backend of a platform is its default, unless ``asdefault`` says otherwise."""
        if not isinstance(backend, str):
            raise TypeError(f"{self.name}: the backend must be a string, got "
                            f"{type(backend).__name__}")
        if not isinstance(platform, str):
            raise TypeError(f"{self.name}: the platform must be a string, got "
                            f"{type(platform).__name__}")
        if _platform_name(platform) not in _LOWERING_PLATFORM:
            raise ValueError(f"{self.name}: platform must be one of cpu, gpu, cuda, tpu, "
                             f"got {platform!r}")
        platform = _platform_name(platform)
        from ._loader import KernelFunction
        if isinstance(kernel, KernelFunction):
            want = "cpu" if platform == "cpu" else "CUDA"
            if kernel.platform.lower() != want.lower():
                raise ValueError(f"{self.name}: {kernel.target} is a {kernel.platform} target; it "
                                 f"cannot be the {platform} implementation")
            kernel = _from_bekc_function(kernel)
        if not callable(kernel):
            raise TypeError(f"{self.name}: a kernel generator must be callable, got "
                            f"{type(kernel).__name__}")
        self._kernels.setdefault(platform, {})[backend] = KernelEntry(backend, platform, kernel)
        if platform not in self._defaults:
            self._defaults[platform] = backend
        elif asdefault:
            self.set_default(platform, backend)

    def def_numba_kernel(self, kg, asdefault: bool = False) -> None:
        """A Numba (CPU) kernel generator, as backend 'numba' for CPUs."""
        self.def_kernel("numba", "cpu", kg, asdefault=asdefault)

    def def_numba_cuda_kernel(self, generator, asdefault: bool = False) -> None:
        """A Numba-CUDA kernel generator (typically returning a function that
        calls :func:`bekc.numba_cuda_kernel`) for GPUs."""
        self.def_kernel("numba_cuda", "gpu", generator, asdefault=asdefault)

    def def_cuda_kernel(self, kernel, asdefault: bool = False) -> None:
        """A bekc-built CUDA target (``bekc.load(...).fn``) or a generator, for GPUs."""
        self.def_kernel("bekc", "gpu", kernel, asdefault=asdefault)

    def def_cpu_kernel(self, kernel, asdefault: bool = False) -> None:
        """A bekc-built ``.cpp`` target (``bekc.load(...).fn``) or a generator, for CPUs."""
        self.def_kernel("bekc", "cpu", kernel, asdefault=asdefault)

    def def_cuda_raw_kernel(self, kg, asdefault: bool = False) -> None:
        """brainevent's name for a CUDA kernel generator: backend 'cuda_raw' for GPUs."""
        self.def_kernel("cuda_raw", "gpu", kg, asdefault=asdefault)

    def def_warp_kernel(self, kg, asdefault: bool = False) -> None:
        """A Warp kernel generator, as backend 'warp' for GPUs."""
        self.def_kernel("warp", "gpu", kg, asdefault=asdefault)

    def def_triton_kernel(self, kg, asdefault: bool = False) -> None:
        """A Triton kernel generator, as backend 'triton' for GPUs."""
        self.def_kernel("triton", "gpu", kg, asdefault=asdefault)

    def def_pallas_kernel(self, platform: str, kg, asdefault: bool = False) -> None:
        """A Pallas kernel generator, as backend 'pallas' for 'gpu' or 'tpu'."""
        if _platform_name(platform) not in ("gpu", "tpu"):
            raise ValueError(f"{self.name}: Pallas kernels run on 'gpu' or 'tpu', got "
                             f"{platform!r}")
        self.def_kernel("pallas", platform, kg, asdefault=asdefault)

    def set_default(self, platform: str, backend: str) -> None:
        """Makes ``backend`` the default for ``platform``. When that changes the
        default, JAX's caches are cleared, so functions jitted before choose again."""
        platform = _platform_name(platform)
        if backend not in self._kernels.get(platform, {}):
            raise ValueError(f"{self.name}: no {backend!r} kernel for {platform}; registered: "
                             f"{', '.join(self._kernels.get(platform, {})) or 'none'}")
        if self._defaults.get(platform) != backend:
            self._defaults[platform] = backend
            _clear_jax_caches()

    def get_default(self, platform: str) -> Optional[str]:
        return self._defaults.get(_platform_name(platform))

    @property
    def defaults(self) -> Dict[str, str]:
        return dict(self._defaults)

    def available_backends(self, platform: str) -> List[str]:
        return list(self._kernels.get(_platform_name(platform), {}))

    # -- transformations --------------------------------------------------------------
    # Each registers a rule for this primitive in JAX's own tables, as brainevent does.
    def def_batching_rule(self, fun: Callable) -> None:
        """``jax.vmap``'s rule: ``fun(args, axes, **params)`` returns the
        outputs and their batch axes (``batching.primitive_batchers``)."""
        from jax.interpreters import batching
        batching.primitive_batchers[self.primitive] = fun

    def register_general_batching(self) -> None:
        """Puts back the rule every primitive starts with: one run per batch
        element under ``jax.lax.scan`` (:func:`bekc.general_batching_rule`)."""
        from jax.interpreters import batching
        from ._ad_rules import general_batching_rule
        batching.primitive_batchers[self.primitive] = functools.partial(
            general_batching_rule, self.primitive)

    def def_jvp_rule(self, fun: Callable) -> None:
        """Forward-mode rule: ``fun(primals, tangents, **params)`` returns the
        outputs and their tangents (``ad.primitive_jvps``)."""
        from jax.interpreters import ad
        ad.primitive_jvps[self.primitive] = fun

    def def_jvp_rule2(self, *jvp_rules: Optional[Callable]) -> None:
        """One JVP rule per input, ``rule(tangent, *primals, **params)``
        returning that input's tangents of the outputs (a tuple, one per
        output); ``None`` for an input that contributes none. See :func:`bekc.defjvp`."""
        from ._ad_rules import defjvp
        defjvp(self.primitive, *jvp_rules)

    def def_transpose_rule(self, fun: Callable) -> None:
        """Reverse-mode rule for the inputs the primitive is linear in:
        ``fun(cotangents, *args, **params)`` returns one cotangent per input,
        ``None`` for the others (``ad.primitive_transposes``)."""
        from jax.interpreters import ad
        ad.primitive_transposes[self.primitive] = fun

    # -- call function, tags, benchmarks ------------------------------------------------
    def def_call(self, fn: Callable) -> None:
        """The user-facing function that calls this primitive; :meth:`call`
        runs it, and :meth:`benchmark` times it with ``backend=`` per backend."""
        self._call_fn = fn

    def call(self, *args, **kwargs):
        """Runs the function given to :meth:`def_call`."""
        if self._call_fn is None:
            raise ValueError(f"{self.name}: no call function; register one with def_call(fn)")
        return self._call_fn(*args, **kwargs)

    def def_tags(self, *tags: str) -> None:
        """Labels for grouping primitives (``'csr'``, ``'binary'``); replaces earlier ones."""
        self._tags = set(tags)

    def def_benchmark_data(self, fn: Callable) -> None:
        """``fn(platform=...)`` returns the list of ``bekc.BenchmarkConfig`` to time."""
        self._benchmark_data_fn = fn

    def benchmark(self, *, platform: str, n_warmup: int = 5, n_runs: int = 20,
                  n_batch_per_run: int = 1, compare_results: bool = True, rtol: float = 1e-3,
                  atol: float = 1e-3, verbose: bool = False, catch_errors: bool = True,
                  backends: Optional[List[str]] = None):
        """Times the call function (:meth:`def_call`) under ``jax.jit`` with
        each of ``backends`` (default: all of ``platform``'s) on each config of
        :meth:`def_benchmark_data`. Returns a ``bekc.BenchmarkResult`` with
        one record per (config, backend); a backend that raises gives a
        failed record unless ``catch_errors=False``. With
        ``compare_results``, outputs that differ from the first backend's
        beyond ``rtol``/``atol`` are printed."""
        from ._benchmark import run_benchmark
        chosen = list(backends) if backends is not None else self.available_backends(platform)
        return run_benchmark(self.name, self._call_fn, self._benchmark_data_fn, chosen,
                             platform=platform, n_warmup=n_warmup, n_runs=n_runs,
                             n_batch_per_run=n_batch_per_run, compare_results=compare_results,
                             rtol=rtol, atol=atol, verbose=verbose, catch_errors=catch_errors)

    # -- lowering ---------------------------------------------------------------------
    def _choose_backend(self, platform: str, requested: Optional[str]) -> str:
        kernels = self._kernels.get(platform, {})
        if not kernels:
            others = sorted(p for p, k in self._kernels.items() if k)
            where = (f"kernels are registered for {', '.join(others)} only" if others
                     else "no kernel is registered for any platform")
            raise KernelFallbackExhaustedError(
                f"{self.name}: no kernel for platform '{platform}'; {where}. Register one with "
                f"def_kernel(backend, '{platform}', generator), or run on a platform that has one")
        if requested == "":
            raise ValueError(f"{self.name}: backend cannot be an empty string; registered for "
                             f"{platform}: {', '.join(kernels)}")
        if requested is not None:
            if requested not in kernels:
                raise KernelFallbackExhaustedError(
                    f"{self.name}: no {requested!r} kernel for {platform}; registered: "
                    f"{', '.join(kernels)}")
            return requested
        chosen = _GLOBAL_BACKENDS.get(platform)
        if chosen in kernels:
            return chosen
        if chosen is not None:
            self._warn_backend_once(
                f"{self.name}: the global backend {chosen!r} (bekc.set_backend) has no kernel "
                f"for {platform} here; ignoring it and using this primitive's default "
                f"{self._defaults[platform]!r}")
        return self._defaults[platform]

    def _build(self, platform: str, chosen: str, args, outs, kwargs) -> List:
        import jax
        specs = [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in outs]
        try:
            kernel = self._kernels[platform][chosen].kernel_generator(outs=specs, **kwargs)
            result = kernel(*args)
        except Exception as exc:
            others = [b for b in self._kernels[platform] if b != chosen]
            raise _compilation_error(
                f"{self.name}: the {chosen!r} kernel for {platform} failed while lowering: "
                f"{type(exc).__name__}: {exc}. Other backends for {platform}: "
                f"{', '.join(others) or 'none'}; pick one with backend='<name>' on the call, "
                f"{self.name}.set_default('{platform}', '<name>') or "
                f"bekc.set_backend('{platform}', '<name>')", exc) from exc
        return _check_outputs(self.name, chosen, platform, result, outs)

    def _register_lowering(self, platform: str) -> None:
        from jax.interpreters import mlir

        def lower(*args, outs, backend=None, **kwargs):
            chosen = self._choose_backend(platform, backend)
            return self._build(platform, chosen, args, outs, kwargs)

        rule = mlir.lower_fun(lower, multiple_results=True)
        mlir.register_lowering(self.primitive, rule, platform=_LOWERING_PLATFORM[platform])

    # -- calling ----------------------------------------------------------------------
    def __call__(self, *ins, outs, **kwargs) -> Any:
        """Binds the primitive; returns arrays in the structure of ``outs``.

        Keyword arguments reach the kernel generator, so they must be static,
        hashable Python values: under ``jax.jit`` mark them ``static_argnames``.
        """
        import jax
        for key, value in kwargs.items():
            _check_kwarg(self.name, key, value)
        leaves, tree = jax.tree_util.tree_flatten(outs)
        avals = tuple(_shaped_array(o.shape, o.dtype) for o in leaves)
        result = self.primitive.bind(*ins, outs=avals, **kwargs)
        return jax.tree_util.tree_unflatten(tree, list(result))
