"""What brainevent 0.2.1's Numba-CUDA tests expect of numba_cuda_kernel, checked
without a GPU or Numba: the order and types of configuration
errors, bfloat16 and 0-d refusals, empty launches, and entries shared between
wrappers. The same behaviour on a GPU: tests/gpu/test_numba_cuda.py and
tests/gpu/brainevent_numba_suite.sh.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import bekc  # noqa: E402
from bekc import _numba_cuda  # noqa: E402

S8 = jax.ShapeDtypeStruct((8,), jnp.float32)


def not_a_kernel(x, out):  # what brainevent's own validation tests wrap
    pass


@pytest.fixture(params=["without numba", "with numba"])
def any_numba(request, monkeypatch):
    """Configuration mistakes are found before Numba is imported, so they read
    the same whether or not Numba is installed."""
    if request.param == "without numba":
        monkeypatch.setitem(sys.modules, "numba", None)
    elif _numba_importable() is False:
        pytest.skip("numba is not installed")


def _numba_importable():
    try:
        _numba_cuda._numba_cuda()
        return True
    except ImportError:
        return False


# =========================================================================== configuration
@pytest.mark.parametrize("kwargs, message", [
    (dict(), "a launch configuration is needed"),
    (dict(grid=4), "grid and block go together: block is missing"),
    (dict(block=256), "grid and block go together: grid is missing"),
    (dict(grid=4, block=256, launch_dims=1024), "not both"),
    (dict(grid=4, launch_dims=1024), "not both"),
    (dict(grid=4, block=256, vmap_method="expand_dims"), "vmap_method='expand_dims' needs "
                                                         "launch_dims"),
    (dict(grid=4, block=256, vmap_method="broadcast_all"), "needs launch_dims"),
])
def test_configuration_mistakes_come_before_the_kernel_type(any_numba, kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        bekc.numba_cuda_kernel(not_a_kernel, outs=S8, **kwargs)
    assert not isinstance(info.value, TypeError)


@pytest.mark.parametrize("kwargs", [
    dict(launch_dims=8, vmap_method="expand_dims"),
    dict(launch_dims=8, vmap_method="broadcast_all"),
    # One unbatched call per slice: a fixed grid serves each of them.
    dict(grid=1, block=8, vmap_method="sequential"),
])
def test_a_vmap_method_that_fits_the_configuration_is_accepted(any_numba, kwargs):
    with pytest.raises((TypeError, ImportError)) as info:  # the kernel's type, checked last
        bekc.numba_cuda_kernel(not_a_kernel, outs=S8, **kwargs)
    assert not isinstance(info.value, ValueError)


# =========================================================================== dtypes
@pytest.mark.parametrize("outs, where", [
    (jax.ShapeDtypeStruct((8,), jnp.bfloat16), "output 0"),
    ([S8, jax.ShapeDtypeStruct((8,), jnp.bfloat16)], "output 1"),
])
def test_bfloat16_outputs_are_refused_when_wrapping(any_numba, outs, where):
    with pytest.raises(ValueError, match=rf"not_a_kernel: {where} has dtype bfloat16, which "
                                         rf"Numba-CUDA arrays cannot hold .*cast it to float16 or "
                                         rf"float32") as info:
        bekc.numba_cuda_kernel(not_a_kernel, outs=outs, launch_dims=8)
    # Also the TypeError bekc documents for dtypes Numba cannot hold.
    assert isinstance(info.value, TypeError)
    assert isinstance(info.value, _numba_cuda.UnsupportedDtypeError)


def _wrapper(outs=S8, launch_dims=8, **kwargs):
    """A numba_cuda_kernel result around a stand-in kernel: everything up to
    the Numba compile runs without Numba."""
    grid, block = _numba_cuda.resolve_launch(launch_dims=launch_dims)
    return _numba_cuda._NumbaKernelCall(not_a_kernel, outs, grid, block, 0,
                                        kwargs.get("vmap_method"),
                                        kwargs.get("input_output_aliases"))


def test_bfloat16_inputs_are_refused_when_tracing():
    fn = _wrapper()
    with pytest.raises(ValueError, match="not_a_kernel: input 0 has dtype bfloat16") as info:
        fn(jnp.arange(8, dtype=jnp.bfloat16))
    assert isinstance(info.value, TypeError)


# =========================================================================== 0-d inputs
@pytest.mark.parametrize("transform", [lambda f: f, jax.jit])
def test_0d_inputs_are_refused_when_tracing(transform):
    fn = _wrapper(outs=jax.ShapeDtypeStruct((1,), jnp.float32), launch_dims=1)
    with pytest.raises(ValueError, match=r"not_a_kernel: input 1 is a 0-d array \(a scalar\), "
                                         r"which numba_cuda_kernel does not take; pass it as a "
                                         r"1-d array"):
        transform(fn)(jnp.ones(1, jnp.float32), jnp.asarray(3.0))


# =========================================================================== empty launches
@pytest.mark.parametrize("transform", [lambda f: f, jax.jit])
def test_launch_dims_of_zero_skip_the_launch_and_zero_the_outputs(transform, monkeypatch,
                                                                  numba_library):
    # launch_stats() reads the library's counters: name it, whatever ran before.
    monkeypatch.setenv("BEKC_NUMBA_LIBRARY", str(numba_library))
    monkeypatch.setattr(_numba_cuda._NumbaKernelCall, "_make_entry",
                        lambda *a: pytest.fail("an empty launch needs no entry"))
    n = 128
    fn = _wrapper(outs=[jax.ShapeDtypeStruct((n,), jnp.float32),
                        jax.ShapeDtypeStruct((2, 3), jnp.int32)],
                  launch_dims=0, input_output_aliases={0: 0})
    a, b = transform(fn)(jnp.arange(1, n + 1, dtype=jnp.float32))
    np.testing.assert_array_equal(a, np.zeros(n, np.float32))
    np.testing.assert_array_equal(b, np.zeros((2, 3), np.int32))
    assert fn.launch_stats() == {"launches": 0, "captured": 0}


def test_an_empty_launch_under_vmap_gives_batched_zeros():
    fn = _wrapper(launch_dims=(0, 4), vmap_method="expand_dims")
    out = jax.vmap(fn)(jnp.ones((3, 8), jnp.float32))
    np.testing.assert_array_equal(out, np.zeros((3, 8), np.float32))


def test_an_empty_launch_still_checks_its_inputs():
    fn = _wrapper(launch_dims=0)
    with pytest.raises(ValueError, match="input 0 has dtype bfloat16"):
        fn(jnp.ones(8, jnp.bfloat16))
    with pytest.raises(ValueError, match="input 0 is a 0-d array"):
        fn(jnp.asarray(1.0))


# =========================================================================== shared entries
@pytest.fixture
def fake_entries(monkeypatch):
    """_make_entry without Numba or a GPU: records each entry it is asked for."""
    made = []

    def make_entry(self, key, arrays):
        made.append((self.kernel, key))
        return 10_000 + len(made)

    monkeypatch.setattr(_numba_cuda._NumbaKernelCall, "_make_entry", make_entry)
    monkeypatch.setattr(_numba_cuda, "_LAUNCH_ENTRIES", {})
    monkeypatch.setattr(_numba_cuda._NumbaKernelCall, "_entries", _numba_cuda._LAUNCH_ENTRIES)
    return made


def _trace(fn, *shapes):
    for shape in shapes:
        jax.eval_shape(fn, jax.ShapeDtypeStruct(shape, jnp.float32))


def test_two_input_shapes_share_one_entry(fake_entries):
    fn = _wrapper()
    _trace(fn, (8,), (16,), (8,))
    assert len(fake_entries) == 1
    assert len(_numba_cuda._LAUNCH_ENTRIES) == 1


def test_wrapping_the_same_kernel_twice_shares_its_entry(fake_entries):
    first, second = _wrapper(), _wrapper()
    _trace(first, (8,))
    _trace(second, (8,), (32,))
    assert len(fake_entries) == 1
    assert first._ids == second._ids


@pytest.mark.parametrize("other", [
    dict(launch_dims=1024),  # another grid
    dict(vmap_method="expand_dims"),  # an entry that takes a vmap axis
    dict(outs=jax.ShapeDtypeStruct((8,), jnp.int32)),  # another output dtype
    dict(outs=jax.ShapeDtypeStruct((2, 4), jnp.float32)),  # another output rank
])
def test_what_gets_its_own_entry(fake_entries, other):
    _trace(_wrapper(), (8,))
    _trace(_wrapper(**other), (8,))
    assert len(fake_entries) == 2


def test_another_input_rank_gets_its_own_entry(fake_entries):
    _trace(_wrapper(), (8,), (2, 4))
    assert len(fake_entries) == 2


def test_a_kernel_with_entries_is_kept_alive(fake_entries):
    fn = _wrapper()
    _trace(fn, (8,))
    assert _numba_cuda._PINNED[id(not_a_kernel)] is not_a_kernel
