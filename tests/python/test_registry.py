"""The process-wide registry under threads: loads of the same build from many
threads at once give one Module and register each target once; loads of
different builds at once all succeed; two libraries racing for the same
target names leave exactly one of them registered, and every other load
raises TargetConflictError; concurrent load_cpp_inline calls of one name give
one Module.
"""

from __future__ import annotations

import threading

import pytest

import bekc
from conftest import REF_TARGETS, make_manifest, unique_prefix

THREADS = 16


def run_together(calls):
    """Runs each call in its own thread, all released at once; returns
    (results, errors) in call order."""
    barrier = threading.Barrier(len(calls))
    results, errors = [None] * len(calls), [None] * len(calls)

    def worker(i):
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as e:  # recorded, asserted on by the test
            errors[i] = e

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a load hung"
    return results, errors


def test_same_and_different_builds_loaded_from_many_threads(ref_libs, tmp_path,
                                                           slow_registration):
    a, b = unique_prefix("reg_a"), unique_prefix("reg_b")
    ma = make_manifest(tmp_path / "a", ref_libs[1], a)
    mb = make_manifest(tmp_path / "b", ref_libs[2], b)
    calls = [(lambda m=(ma if i % 2 else mb): bekc.load(m)) for i in range(THREADS)]
    results, errors = run_together(calls)
    assert errors == [None] * THREADS
    mods_a = {id(m) for i, m in enumerate(results) if i % 2}
    mods_b = {id(m) for i, m in enumerate(results) if not i % 2}
    assert len(mods_a) == 1 and len(mods_b) == 1 and mods_a != mods_b
    targets = bekc.registered_targets()
    for prefix, module in ((a, results[1]), (b, results[0])):
        assert module.registered
        for fn, *_ in REF_TARGETS:
            assert targets[f"{prefix}.{fn}"] == module.library_path
    # Loaded again afterwards: the same modules.
    assert bekc.load(ma) is results[1] and bekc.load(mb) is results[0]


@pytest.fixture
def slow_registration(monkeypatch):
    """Registering a target sleeps first, so threads that are not kept apart
    interleave between checking a name and registering it."""
    import time
    jax = pytest.importorskip("jax")
    real = jax.ffi.register_ffi_target

    def slow(*args, **kwargs):
        time.sleep(0.005)
        return real(*args, **kwargs)

    monkeypatch.setattr(jax.ffi, "register_ffi_target", slow)


def test_two_libraries_racing_for_one_prefix_leave_one_registered(ref_libs, tmp_path,
                                                                  slow_registration):
    prefix = unique_prefix("reg_race")
    ma = make_manifest(tmp_path / "a", ref_libs[1], prefix)
    mb = make_manifest(tmp_path / "b", ref_libs[2], prefix)
    calls = [(lambda m=(ma if i % 2 else mb): bekc.load(m)) for i in range(THREADS)]
    results, errors = run_together(calls)
    winners = {id(m) for m in results if m is not None}
    assert len(winners) == 1, "both libraries were registered under one prefix"
    winner = next(m for m in results if m is not None)
    for i in range(THREADS):
        lost = (ma if i % 2 else mb) != winner.manifest_path
        if lost:
            assert isinstance(errors[i], bekc.TargetConflictError), errors[i]
        else:
            assert errors[i] is None and results[i] is winner
    targets = bekc.registered_targets()
    for fn, *_ in REF_TARGETS:
        assert targets[f"{prefix}.{fn}"] == winner.library_path


CPP = """\
#include "brainevent/common.h"
// @BE {fn}
void {fn}(const BE::Tensor x, BE::Tensor out) {{
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + {add}.0f;
}}
"""


def test_concurrent_inline_loads_of_one_name_give_one_module(bekc_bin):
    one, two = unique_prefix("reg_one"), unique_prefix("reg_two")
    calls = [(lambda n=(one if i % 2 else two), add=i % 2:
              bekc.load_cpp_inline(n, CPP.format(fn="plus", add=add)))
             for i in range(8)]
    results, errors = run_together(calls)
    assert errors == [None] * 8
    assert len({id(m) for i, m in enumerate(results) if i % 2}) == 1
    assert len({id(m) for i, m in enumerate(results) if not i % 2}) == 1
    np = pytest.importorskip("numpy")
    x = np.arange(4, dtype=np.float32)
    assert np.allclose(results[1].plus(x), x + 1)
    assert np.allclose(results[0].plus(x), x)
