"""pytest plugin for running brainevent 0.2.1's Numba-CUDA tests against bekc.

Loaded by tests/gpu/brainevent_numba_suite.sh with ``-p brainevent_numba_plugin``.
With ``BEKC_SUITE_MODE=bekc`` (the default) it points brainevent's names at
bekc before the tests are collected:

* ``brainevent.numba_cuda_kernel`` / ``numba_cuda_callable`` (the tests import
  them inside each test) become ``bekc.numba_cuda_kernel`` / ``numba_cuda_callable``;
* ``XLACustomKernel`` in ``brainevent._op.main`` becomes ``bekc.XLACustomKernel``,
  and the public names main_test.py uses with it become bekc's: the global
  ``set_backend``/``get_backend``/``clear_backends`` of ``brainevent.config``
  and the errors ``brainevent.KernelCompilationError`` and
  ``KernelFallbackExhaustedError``;
* ``numba_cuda_ffi._NUMBA_CUDA_FFI_TARGETS``, the registrations two tests count,
  becomes bekc's table of library entries, the same observation made on bekc.

Tests that only inspect brainevent's private internals are skipped, each with
its reason (docs/numba.md lists them). ``BEKC_SUITE_MODE=brainevent`` runs the
tests against brainevent itself, as they ship.
"""

from __future__ import annotations

import os

# test id (class::name, or class for all of its tests) -> why it says nothing about bekc
PRIVATE = {
    "TestComputeLaunchConfig":
        "calls brainevent's private _compute_launch_config; bekc's launch shapes are "
        "bekc.resolve_launch, tested in tests/python/test_numba_cuda_cpu.py",
    "TestImportNumbaCudaPoisoning":
        "patches brainevent's private import_numba_cuda and its numba_cuda_installed flag",
    "TestContentDerivedNaming":
        "calls brainevent's private _register_numba_cuda_ffi_target and checks its FFI target "
        "names; bekc registers two fixed targets and shares entries (test_wrapping_a_kernel_"
        "again_reuses_its_entry)",
    "TestNumbaCudaKernelXLAStream":
        "wraps brainevent's private get_xla_stream, which only brainevent's Python handler "
        "calls; bekc's compiled handler is checked by test_the_kernel_runs_on_xlas_stream",
}


# brainevent's public names that go with XLACustomKernel, and are bekc's own.
_XLA_CUSTOM_KERNEL_NAMES = ("set_backend", "get_backend", "clear_backends",
                            "KernelCompilationError", "KernelFallbackExhaustedError")


def _mode() -> str:
    return os.environ.get("BEKC_SUITE_MODE", "bekc")


def pytest_configure(config):
    if _mode() != "bekc":
        return
    import bekc
    from bekc import _numba_cuda

    try:
        _numba_cuda._numba_cuda()  # numba-cuda's import needs np.row_stack on NumPy 2.5
    except ImportError:
        pass  # the tests that need Numba skip themselves
    import brainevent
    from brainevent._op import main, numba_cuda_ffi

    for module in (brainevent, numba_cuda_ffi):
        module.numba_cuda_kernel = bekc.numba_cuda_kernel
        module.numba_cuda_callable = bekc.numba_cuda_callable
    main.XLACustomKernel = bekc.XLACustomKernel
    for module in (brainevent, brainevent.config):
        for name in _XLA_CUSTOM_KERNEL_NAMES:
            if hasattr(module, name):  # each name where brainevent has it
                setattr(module, name, getattr(bekc, name))
    numba_cuda_ffi._NUMBA_CUDA_FFI_TARGETS = _numba_cuda._LAUNCH_ENTRIES
    print("brainevent_numba_plugin: brainevent's Numba-CUDA API points at bekc")


def pytest_collection_modifyitems(config, items):
    if _mode() != "bekc":
        return
    import pytest

    for item in items:
        cls = item.cls.__name__ if item.cls else ""
        reason = PRIVATE.get(f"{cls}::{item.name}") or PRIVATE.get(cls)
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"brainevent internals: {reason}"))
