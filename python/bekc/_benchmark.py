"""Timing an XLACustomKernel's backends against each other, as brainevent does.

``op.def_call(fn)`` names the function that calls the primitive (it takes a
``backend=`` keyword), and ``op.def_benchmark_data(data)`` the function that
returns the inputs to time, ``data(platform=...) -> [BenchmarkConfig, ...]``.
``op.benchmark(platform=...)`` then runs ``fn`` under ``jax.jit`` with each
backend on each config and returns a :class:`BenchmarkResult`: one
:class:`BenchmarkRecord` per (config, backend). brainevent's result also
prints, plots and saves tables; bekc's holds the records (``records``,
``fastest``) and prints one line per record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._errors import BekcError

__all__ = ["BenchmarkConfig", "BenchmarkRecord", "BenchmarkResult", "benchmark_function",
           "BenchmarkDataFnNotProvidedError"]


class BenchmarkDataFnNotProvidedError(BekcError, ValueError):
    """``benchmark()`` was called on a primitive without ``def_benchmark_data``."""


@dataclass
class BenchmarkConfig:
    """One set of inputs to time. ``args`` go to the call function by position,
    ``kernel_kwargs`` by keyword; ``data_kwargs`` only describe the data
    (sizes, densities) and are kept in the records."""
    name: str
    args: tuple
    kernel_kwargs: dict = field(default_factory=dict)
    data_kwargs: dict = field(default_factory=dict)

    def put_args(self, device=None) -> "BenchmarkConfig":
        """The same config with its arrays on ``device`` (JAX's default when None)."""
        import jax
        args = tuple(jax.device_put(a, device=device).block_until_ready() for a in self.args)
        return BenchmarkConfig(self.name, args, self.kernel_kwargs, self.data_kwargs)


@dataclass
class BenchmarkRecord:
    """One backend on one config: times per call in milliseconds, or, when the
    run raised, ``success=False`` and the error as text."""
    platform: str
    backend: str
    label: str
    mean_ms: float
    std_ms: float
    min_ms: float
    throughput: Optional[float]
    success: bool
    error: Optional[str]
    kernel_kwargs: Dict[str, Any]
    data_kwargs: Dict[str, Any]


class BenchmarkResult:
    """The records of one ``benchmark()`` call."""

    def __init__(self, records: List[BenchmarkRecord], primitive_name: str = "") -> None:
        self._records = list(records)
        self.primitive_name = primitive_name

    @property
    def records(self) -> List[BenchmarkRecord]:
        return list(self._records)

    def fastest(self, label: Optional[str] = None) -> Optional[BenchmarkRecord]:
        """The successful record with the least mean time (of config ``label``
        only, when given); None when there is none."""
        done = [r for r in self._records if r.success and label in (None, r.label)]
        return min(done, key=lambda r: r.mean_ms) if done else None

    def __str__(self) -> str:
        lines = [f"{self.primitive_name}: {len(self._records)} records"]
        for r in self._records:
            what = (f"mean {r.mean_ms:.3f} ms, std {r.std_ms:.3f} ms, min {r.min_ms:.3f} ms"
                    if r.success else f"failed: {r.error}")
            lines.append(f"  [{r.platform}|{r.backend}] {r.label}: {what}")
        return "\n".join(lines)

    __repr__ = __str__


def benchmark_function(fn: Callable, n_warmup: int, n_runs: int, n_batch_per_run: int = 1,
                       data: Tuple = ()) -> Tuple[float, float, float, float, Any]:
    """Times ``fn(*data)``: ``n_warmup`` untimed runs, then ``n_runs`` timed
    ones of ``n_batch_per_run`` calls each. Returns the mean, standard
    deviation, least and greatest time per call in seconds, and ``fn``'s output."""
    import jax
    import numpy as np
    output = fn(*data)
    jax.block_until_ready(output)

    @jax.jit
    def timed(*args):
        if n_batch_per_run == 1:
            result = fn(*args)
        else:
            result = jax.lax.fori_loop(0, n_batch_per_run, lambda i, carry: fn(*args), output)
        # One leaf is enough to wait for the whole computation.
        return jax.tree_util.tree_leaves(result)[0]

    for _ in range(n_warmup):
        timed(*data).block_until_ready()
    times = []
    for _ in range(n_runs):
        start = time.perf_counter()
        timed(*data).block_until_ready()
        times.append((time.perf_counter() - start) / n_batch_per_run)
    t = np.asarray(times)
    return float(t.mean()), float(t.std()), float(t.min()), float(t.max()), output


def _record(platform, backend, config, times=None, error=None) -> BenchmarkRecord:
    nan = float("nan")
    mean, std, least = (times or (nan, nan, nan))[:3]
    return BenchmarkRecord(platform, backend, config.name, mean * 1e3, std * 1e3, least * 1e3,
                           None, error is None, error, dict(config.kernel_kwargs),
                           dict(config.data_kwargs))


def _compare(name, label, outputs, rtol, atol) -> None:
    """Prints each backend whose output differs from the first backend's."""
    import jax
    import jax.numpy as jnp
    backends = list(outputs)
    first = jax.tree_util.tree_leaves(outputs[backends[0]])
    for other in backends[1:]:
        try:
            theirs = jax.tree_util.tree_leaves(outputs[other])
            for i, (a, b) in enumerate(zip(first, theirs)):
                if not jnp.allclose(a, b, rtol=rtol, atol=atol):
                    print(f"[{name}][{label}] {backends[0]} vs {other}: output[{i}] mismatch")
        except Exception as e:  # noqa: BLE001 - a comparison that fails is reported, not raised
            print(f"[{name}][{label}] {backends[0]} vs {other}: comparison error: {e}")


def run_benchmark(name: str, call_fn: Optional[Callable], data_fn: Optional[Callable],
                  backends: List[str], *, platform: str, n_warmup: int, n_runs: int,
                  n_batch_per_run: int, compare_results: bool, rtol: float, atol: float,
                  verbose: bool, catch_errors: bool) -> BenchmarkResult:
    """XLACustomKernel.benchmark's loop (see there)."""
    import jax
    if call_fn is None:
        raise ValueError(f"{name}: no call function to benchmark; register one with "
                         f"def_call(fn) first")
    if data_fn is None:
        raise BenchmarkDataFnNotProvidedError(
            f"{name}: no benchmark data; register a function with def_benchmark_data(fn), "
            f"fn(platform=...) returning a list of BenchmarkConfig")
    if not backends:
        raise ValueError(f"{name}: no backends registered for platform '{platform}'")
    records: List[BenchmarkRecord] = []
    for config in data_fn(platform=platform):
        config = config.put_args()
        outputs = {}
        for backend in backends:
            def run(*args, _backend=backend, _kw=config.kernel_kwargs):
                return call_fn(*args, backend=_backend, **_kw)
            try:
                *times, out = benchmark_function(jax.jit(run), n_warmup, n_runs,
                                                 n_batch_per_run, config.args)
                record = _record(platform, backend, config, tuple(times))
                outputs[backend] = out
            except Exception as e:  # noqa: BLE001 - brainevent records a failing backend
                if not catch_errors:
                    raise
                record = _record(platform, backend, config, error=f"{type(e).__name__}: {e}")
            records.append(record)
            if verbose:
                print(str(BenchmarkResult([record], name)).splitlines()[1].strip())
        if compare_results and len(outputs) > 1:
            _compare(name, config.name, outputs, rtol, atol)
    return BenchmarkResult(records, name)
