"""pytest plugin for running brainevent 0.2.1's own test suite (issue 11).

Loaded by tests/gpu/brainevent_suite.sh with ``-p brainevent_plugin``:

* keeps the tests of brainevent's CUDA backends: those parametrized with the
  ``cuda_raw`` or ``cublas`` backend, and those that take no backend at all;
  the variants for other backends (jax_raw, pallas, numba, warp, ...) are
  deselected, since bekc has nothing to do with them;
* counts every compile brainevent's own pipeline ("kernix") starts, by
  wrapping its compiler backends, and writes the count per worker to
  ``$BEKC_SUITE_COUNTS/<worker>.json``;
* with ``BEKC_SUITE_MODE=bekc``, calls ``bekc.use_for_brainevent()`` first, so
  every kernel brainevent loads is built by bekc instead (the count must stay 0).
"""

from __future__ import annotations

import json
import os

# Every backend name brainevent 0.2.1 registers kernels under.
BACKENDS = {"jax_raw", "cuda_raw", "cublas", "numba", "numba_cuda", "pallas", "warp",
            "triton", "mosaic_tpu", "tvmffi"}
KEEP = {"cuda_raw", "cublas"}
_COMPILES = {"count": 0, "modules": []}


def _count_kernix_compiles() -> None:
    from brainevent._op import kernix_compiler

    for cls in (kernix_compiler.CUDABackend, kernix_compiler.CPPBackend):
        original = cls.compile_source

        def counting(self, source, output_path, *args, _original=original, **kwargs):
            _COMPILES["count"] += 1
            _COMPILES["modules"].append(os.path.basename(str(output_path)))
            return _original(self, source, output_path, *args, **kwargs)

        cls.compile_source = counting


def pytest_configure(config):
    _count_kernix_compiles()
    if os.environ.get("BEKC_SUITE_MODE") == "bekc":
        import bekc

        report = bekc.use_for_brainevent()
        print(f"bekc.use_for_brainevent(): {report}")


def _backends_of(item) -> set:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return set()
    return {v for v in callspec.params.values() if isinstance(v, str) and v in BACKENDS}


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        backends = _backends_of(item)
        (kept if not backends or backends & KEEP else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("BEKC_SUITE_COUNTS")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(out, f"{worker}.json"), "w") as f:
        json.dump(_COMPILES, f)
