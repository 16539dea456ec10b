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
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict

from ._errors import BekcError

__all__ = ["XLACustomKernel", "KernelEntry"]

# brainevent's platform names, and JAX's lowering platforms for each.
_LOWERING_PLATFORMS = {"cpu": ("cpu",), "gpu": ("cuda",), "cuda": ("cuda",)}


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


class XLACustomKernel:
    """A custom JAX primitive whose implementation depends on the platform."""

    def __init__(self, name: str, doc: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"XLACustomKernel needs a non-empty name, got {name!r}")
        from jax.extend.core import Primitive
        from jax._src import dispatch
        self.name = name
        self.primitive = Primitive(name)
        self.primitive.multiple_results = True
        self.primitive.def_impl(functools.partial(dispatch.apply_primitive, self.primitive))
        self.primitive.def_abstract_eval(self._abstract_eval)
        if doc is not None:
            self.__doc__ = doc
        self._kernels: Dict[str, Dict[str, KernelEntry]] = {}
        self._defaults: Dict[str, str] = {}
        self._lowered: set = set()

    def __repr__(self) -> str:
        impls = ", ".join(f"{p}: {', '.join(b)}" for p, b in self._kernels.items()) or "none"
        return f"<bekc XLACustomKernel {self.name} ({impls})>"

    @staticmethod
    def _abstract_eval(*avals, outs, **kwargs):
        return tuple(outs)

    # -- registration -----------------------------------------------------------------
    def def_kernel(self, backend: str, platform: str, kernel, asdefault: bool = False) -> None:
        """Registers ``kernel`` (a kernel generator, or a bekc function) as
        ``backend`` for ``platform`` ('cpu', or 'gpu'/'cuda'). The first
        backend of a platform is its default, unless ``asdefault`` says otherwise."""
        if platform not in _LOWERING_PLATFORMS:
            raise ValueError(f"{self.name}: platform must be one of "
                             f"{', '.join(_LOWERING_PLATFORMS)}, got {platform!r}")
        platform = "gpu" if platform == "cuda" else platform
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
        if asdefault or platform not in self._defaults:
            self._defaults[platform] = backend
        if platform not in self._lowered:
            self._register_lowering(platform)
            self._lowered.add(platform)

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

    def set_default(self, platform: str, backend: str) -> None:
        """Makes ``backend`` the default for ``platform`` from the next trace
        on; a function already jitted keeps the backend it was traced with."""
        platform = "gpu" if platform == "cuda" else platform
        if backend not in self._kernels.get(platform, {}):
            raise ValueError(f"{self.name}: no {backend!r} kernel for {platform}; registered: "
                             f"{', '.join(self._kernels.get(platform, {})) or 'none'}")
        self._defaults[platform] = backend

    @property
    def defaults(self) -> Dict[str, str]:
        return dict(self._defaults)

    def _register_lowering(self, platform: str) -> None:
        from jax.interpreters import mlir

        def lower(*args, outs, backend=None, bekc_defaults=(), **kwargs):
            kernels = self._kernels.get(platform, {})
            chosen = backend or dict(bekc_defaults).get(platform)
            if chosen not in kernels:
                raise BekcError(f"{self.name}: no {chosen!r} kernel for {platform}; registered: "
                                f"{', '.join(kernels) or 'none'}")
            import jax
            specs = [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in outs]
            kernel = kernels[chosen].kernel_generator(outs=specs, **kwargs)
            result = kernel(*args)
            if not isinstance(result, (list, tuple)):
                result = [result]
            if len(result) != len(outs):
                raise BekcError(f"{self.name}: the {chosen} kernel for {platform} returned "
                                f"{len(result)} arrays; outs lists {len(outs)}")
            for i, (r, o) in enumerate(zip(result, outs)):
                shape, dtype = tuple(getattr(r, "shape", ())), getattr(r, "dtype", None)
                if shape != tuple(o.shape) or dtype != o.dtype:
                    raise BekcError(f"{self.name}: the {chosen} kernel for {platform} returned "
                                    f"output {i} as {dtype}{list(shape)}; outs says "
                                    f"{o.dtype}{list(o.shape)}")
            return list(result)

        rule = mlir.lower_fun(lower, multiple_results=True)
        for p in _LOWERING_PLATFORMS[platform]:
            mlir.register_lowering(self.primitive, rule, platform=p)

    # -- calling ----------------------------------------------------------------------
    def __call__(self, *ins, outs, **kwargs) -> Any:
        """Binds the primitive; returns arrays in the structure of ``outs``.

        Keyword arguments reach the kernel generator, so they must be static
        Python values: under ``jax.jit`` mark them ``static_argnames``.
        """
        import jax
        for k, v in kwargs.items():
            if any(_is_tracer(leaf) for leaf in jax.tree_util.tree_leaves(v)):
                raise TypeError(
                    f"{self.name}: keyword argument {k!r} is a traced value, but kernel "
                    f"generators need it as a Python value at trace time. Under jax.jit, mark "
                    f"it static (jax.jit(f, static_argnames=({k!r},))) or pass it as an input "
                    f"array")
        leaves, tree = jax.tree_util.tree_flatten(outs)
        avals = tuple(_shaped_array(o.shape, o.dtype) for o in leaves)
        try:
            hash(tuple(kwargs.items()))
        except TypeError as e:
            raise TypeError(f"{self.name}: keyword arguments must be hashable (use tuples, not "
                            f"lists): {e}") from None
        # The defaults as they are now are a parameter of the call, so that a
        # later set_default is not hidden by JAX's caches of earlier lowerings.
        defaults = tuple(sorted(self._defaults.items()))
        result = self.primitive.bind(*ins, outs=avals, bekc_defaults=defaults, **kwargs)
        return jax.tree_util.tree_unflatten(tree, list(result))
