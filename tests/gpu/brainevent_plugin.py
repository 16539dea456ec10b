"""pytest plugin for running brainevent's own test suite (0.2.1 and 0.3.0).

Loaded by tests/gpu/brainevent_suite.sh with ``-p brainevent_plugin``:

* keeps the tests of brainevent's CUDA backends: those parametrized with the
  ``cuda_raw`` or ``cublas`` backend, and those that take no backend at all;
  the variants for other backends (jax_raw, pallas, numba, warp, ...) are
  deselected, since bekc has nothing to do with them;
* with ``BEKC_SUITE_GPUS=0,1,...``, gives each xdist worker one of those
  GPUs in turn;
* counts every compile brainevent's own pipeline ("kernix") starts, by
  wrapping its compiler backends, and writes the count per worker to
  ``$BEKC_SUITE_COUNTS/<worker>.json``;
* with ``BEKC_SUITE_MODE=bekc``, calls ``bekc.use_for_brainevent()`` first, so
  every kernel brainevent loads is built by bekc instead (the count must stay 0);
* with ``BEKC_SUITE_SHARD=K/N``, keeps only the tests whose id hashes to shard
  K of N (CRC-32 of the node id, so every process and run agrees), so that a
  suite too long for one command runs as N commands;
* with ``BEKC_SUITE_RESUME=1`` as well, leaves out the tests that already
  have an outcome there, so the next command picks up where a stopped one
  left off;
* with ``BEKC_SUITE_OUTCOMES=DIR``, appends each test's outcome as one JSON
  line to ``DIR/<worker>.jsonl`` the moment it is known, so that a shard cut
  short by a time limit still leaves the outcome of every test it finished
  (pytest writes its JUnit XML only at the end).
"""

from __future__ import annotations

import json
import os
import zlib

# Every backend name brainevent 0.2.1 and 0.3.0 register kernels under.
BACKENDS = {"jax_raw", "jax", "cuda_raw", "cublas", "cusparse", "numba", "numba_cuda", "pallas",
            "warp", "triton", "mosaic_tpu", "tvmffi"}
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


def _spread_over_gpus() -> None:
    """Under xdist, give worker gwN the Nth visible GPU (round robin), so that
    a machine's GPUs share the load; JAX would otherwise put every worker's
    arrays on the first one. Runs before JAX picks its devices."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    gpus = os.environ.get("BEKC_SUITE_GPUS", "")
    if not worker.startswith("gw") or not gpus:
        return
    ids = [g for g in gpus.split(",") if g]
    os.environ["CUDA_VISIBLE_DEVICES"] = ids[int(worker[2:]) % len(ids)]


def pytest_configure(config):
    _spread_over_gpus()
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


def _shard() -> tuple:
    spec = os.environ.get("BEKC_SUITE_SHARD", "")
    if not spec:
        return 1, 1
    k, _, n = spec.partition("/")
    k, n = int(k), int(n)
    if not 1 <= k <= n:
        raise ValueError(f"BEKC_SUITE_SHARD={spec}: want K/N with 1 <= K <= N")
    return k, n


def _in_shard(nodeid: str, k: int, n: int) -> bool:
    return zlib.crc32(nodeid.encode("utf-8")) % n == k - 1


def _finished() -> set:
    out = os.environ.get("BEKC_SUITE_OUTCOMES")
    if not out or os.environ.get("BEKC_SUITE_RESUME") != "1" or not os.path.isdir(out):
        return set()
    done = set()
    for name in os.listdir(out):
        if name.endswith(".jsonl"):
            with open(os.path.join(out, name), encoding="utf-8") as f:
                for line in f:
                    try:
                        done.add(json.loads(line)["id"])
                    except (json.JSONDecodeError, KeyError):
                        pass  # a line cut by a kill
    return done


def pytest_collection_modifyitems(config, items):
    k, n = _shard()
    done = _finished()
    kept, dropped = [], []
    for item in items:
        backends = _backends_of(item)
        wanted = ((not backends or backends & KEEP) and _in_shard(item.nodeid, k, n)
                  and item.nodeid not in done)
        (kept if wanted else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


_OUTCOMES = {"file": None}


def pytest_runtest_logreport(report):
    """One line per test: "failed" if any phase failed, "skipped" if it was
    skipped, "passed" once its call passed (written at teardown)."""
    out = os.environ.get("BEKC_SUITE_OUTCOMES")
    # Written by the process that reports to the terminal: under xdist the
    # controller, which hears of every worker's test (a crashed one too).
    if not out or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.failed:
        outcome = "failed"
    elif report.skipped:
        outcome = "skipped"
    elif report.when == "call":
        outcome = "passed"
    else:
        return
    if _OUTCOMES["file"] is None:
        os.makedirs(out, exist_ok=True)
        _OUTCOMES["file"] = open(os.path.join(out, f"{os.getpid()}.jsonl"), "a", buffering=1)
    _OUTCOMES["file"].write(json.dumps({"id": report.nodeid, "when": report.when,
                                        "outcome": outcome,
                                        "seconds": round(report.duration, 3)}) + "\n")


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("BEKC_SUITE_COUNTS")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(out, f"{worker}-{os.getpid()}.json"), "w") as f:
        json.dump(_COMPILES, f)
