"""bekc: load ``bekc build`` outputs into JAX.

``bekc.load("build/manifest.json")`` checks the manifest and its library,
registers every FFI target with JAX and returns a :class:`Module`::

    mod = bekc.load(path)
    y = mod.scale_by(x, scale_factor=3.0)          # typed call
    y = jax.ffi.ffi_call("scale_ops.scale_by",     # or the plain JAX way
                         jax.ShapeDtypeStruct(x.shape, x.dtype))(
                             x, scale_factor=np.float32(3.0))

brainevent's loaders (``load_cuda_inline``, ``load_cuda_file``,
``load_cuda_dir``, ``load_cpp_inline``, ``load_cpp_file``, ``clear_cache``,
``set_cache_dir``, ``get_cache_dir``) keep their parameters and drive the
``bekc`` binary (found through ``$BEKC``, the one installed by the same
wheel, ``PATH``, then ``bekc/bin/bekc``).
``use_for_brainevent()`` makes an installed brainevent use them for every
kernel it builds itself.

``numba_cuda_kernel`` and ``numba_cuda_callable`` turn ``@numba.cuda.jit``
kernels into JAX calls (the first with no Python per call);
``XLACustomKernel`` is one primitive with an implementation per platform,
with brainevent's rules for ``jax.grad``, ``jax.vmap`` and benchmarks.

Importing this package does not import JAX; JAX is needed to register and call.
"""

from __future__ import annotations

from ._version import __version__

from ._errors import (
    BekcError,
    BinaryNotFoundError,
    CacheError,
    CompileError,
    LibraryHashMismatchError,
    LibraryLoadError,
    ManifestError,
    NotBatchableError,
    NotDifferentiableError,
    RegistrationError,
    TargetConflictError,
    UnsupportedArchError,
)
from ._attrs import ATTR_TYPES, cast_attr
from ._loader import KernelFunction, Module, load, registered_targets
from ._binary import find_binary
from ._cmake import get_cmake_dir
from ._argv import build_argv
from ._compat import (
    clear_cache,
    get_cache_dir,
    load_cpp_file,
    load_cpp_inline,
    load_cuda_dir,
    load_cuda_file,
    load_cuda_inline,
    set_cache_dir,
)
from ._brainevent import (
    TESTED_BRAINEVENT_VERSIONS,
    BrainEventNotInstalledError,
    BrainEventPatch,
    UnsupportedBrainEventVersionError,
    UntestedBrainEventWarning,
    use_for_brainevent,
)

# The brainevent releases use_for_brainevent() accepts without a warning.
# Widen it here (bekc.SUPPORTED_BRAINEVENT_VERSIONS |= {"0.4.0"}); it is read
# at each call. Every release's loaders are checked by their parameters all the same.
SUPPORTED_BRAINEVENT_VERSIONS = TESTED_BRAINEVENT_VERSIONS
from ._numba_cuda import (NotAKernelError, UnsupportedDtypeError, numba_cuda_callable,
                          numba_cuda_kernel, resolve_launch)
from ._custom_kernel import (KernelCompilationError, KernelEntry, KernelFallbackExhaustedError,
                             XLACustomKernel, clear_backends, get_backend, set_backend)
from ._ad_rules import defjvp, general_batching_rule
from ._benchmark import (BenchmarkConfig, BenchmarkDataFnNotProvidedError, BenchmarkRecord,
                         BenchmarkResult, benchmark_function)
from ._diagnostics import list_registered_targets, print_diagnostics
from . import _compat, _library, _lookup

# What every process that loads kernels sets up once is set up on import, as
# a package with a native core does, not by the first load: the in-process
# lookup's library (docs/cache.md, "Hits inside the Python process"), what
# the loaders look up in this interpreter, and the ctypes functions that
# check a library's symbols. None of it imports JAX or raises.
_lookup.preload()
_compat.prime()
_library.symbol_api()

# brainevent's name for what its loaders return; bekc's loaders return a Module,
# which has CompiledModule's path, function_names, content_hash and get_handler.
CompiledModule = Module

__all__ = [
    "__version__",
    "load", "Module", "KernelFunction", "registered_targets",
    "load_cuda_inline", "load_cuda_file", "load_cuda_dir",
    "load_cpp_inline", "load_cpp_file",
    "clear_cache", "set_cache_dir", "get_cache_dir",
    "use_for_brainevent", "BrainEventPatch", "SUPPORTED_BRAINEVENT_VERSIONS",
    "TESTED_BRAINEVENT_VERSIONS", "UntestedBrainEventWarning",
    "find_binary", "get_cmake_dir", "build_argv", "cast_attr", "ATTR_TYPES",
    "numba_cuda_kernel", "numba_cuda_callable", "resolve_launch", "UnsupportedDtypeError",
    "XLACustomKernel", "set_backend", "get_backend", "clear_backends",
    "KernelEntry", "NotAKernelError", "KernelCompilationError", "KernelFallbackExhaustedError",
    "defjvp", "general_batching_rule", "BenchmarkConfig", "BenchmarkRecord", "BenchmarkResult",
    "benchmark_function", "BenchmarkDataFnNotProvidedError",
    "list_registered_targets", "print_diagnostics", "CompiledModule",
    "BekcError", "ManifestError", "LibraryHashMismatchError", "LibraryLoadError",
    "RegistrationError", "TargetConflictError", "BinaryNotFoundError", "CompileError",
    "UnsupportedArchError", "CacheError", "NotBatchableError", "NotDifferentiableError",
    "BrainEventNotInstalledError", "UnsupportedBrainEventVersionError",
]
