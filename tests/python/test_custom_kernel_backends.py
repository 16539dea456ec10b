"""``bekc.XLACustomKernel``: choosing a backend, and the errors and warnings
around it, as brainevent 0.2.1's XLACustomKernel does (its tests are
brainevent/_op/main_test.py, run on a GPU by tests/gpu/brainevent_numba_suite.sh).

Plain Python kernel generators on JAX's CPU; no bekc binary needed.
"""

from __future__ import annotations

import re
import warnings
from unittest import mock

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import bekc  # noqa: E402
from bekc import XLACustomKernel  # noqa: E402
from conftest import unique_prefix  # noqa: E402

OUTS = [jax.ShapeDtypeStruct((4,), jnp.float32)]


@pytest.fixture
def x():
    return jax.device_put(jnp.arange(4, dtype=jnp.float32), jax.devices("cpu")[0])


@pytest.fixture(autouse=True)
def no_global_backends():
    yield
    if hasattr(bekc, "clear_backends"):
        bekc.clear_backends()


def adds(constant):
    """A kernel generator whose kernel adds ``constant``: tells backends apart."""
    def generator(**kwargs):
        return lambda a: [a + constant]
    return generator


def two_backends(what="backends"):
    op = XLACustomKernel(unique_prefix(what))
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0))
    return op


def added(op, x, **kwargs):
    """What ``op`` added to ``x``, eagerly."""
    return float(np.asarray(op(x, outs=OUTS, **kwargs)[0] - x)[0])


# =========================================================================== global backends
def test_global_backend_overrides_the_primitive_default(x):
    op = two_backends()
    assert added(op, x) == 1.0
    bekc.set_backend("cpu", "b")
    assert bekc.get_backend("cpu") == "b"
    assert added(op, x) == 2.0                 # an eager call seen before chooses again
    op.set_default("cpu", "a")
    assert added(op, x) == 2.0                 # the global backend wins over the default
    assert added(op, x, backend="a") == 1.0    # and the call's backend= over both
    bekc.clear_backends()
    assert bekc.get_backend("cpu") is None
    assert added(op, x) == 1.0


@pytest.mark.parametrize("switch", [
    lambda op: bekc.set_backend("cpu", "b"),
    lambda op: op.set_default("cpu", "b"),
], ids=["global backend", "per-primitive default"])
def test_a_new_backend_reaches_a_function_jitted_before(x, switch):
    op = two_backends()
    f = jax.jit(lambda a: op(a, outs=OUTS)[0])
    np.testing.assert_allclose(f(x), np.asarray(x) + 1.0)
    switch(op)
    np.testing.assert_allclose(f(x), np.asarray(x) + 2.0)


def test_set_backend_none_removes_the_global_choice(x):
    op = two_backends()
    bekc.set_backend("cuda", "b")              # 'cuda' is another name for 'gpu'
    assert bekc.get_backend("gpu") == "b"
    bekc.set_backend("cpu", "b")
    bekc.set_backend("cpu", None)
    assert bekc.get_backend("cpu") is None
    assert added(op, x) == 1.0


def test_set_backend_refuses_an_empty_name():
    with pytest.raises(ValueError, match="backend cannot be an empty string"):
        bekc.set_backend("cpu", "")


def test_global_backends_clear_jax_caches_only_when_they_change():
    with mock.patch("jax.clear_caches") as clear_caches:
        bekc.clear_backends()                  # nothing set: nothing to clear
        bekc.set_backend("cpu", "b")
        bekc.set_backend("cpu", "b")
        assert clear_caches.call_count == 1
        bekc.set_backend("cpu", None)
        bekc.set_backend("cpu", None)
        assert clear_caches.call_count == 2
        bekc.set_backend("cpu", "b")
        bekc.clear_backends()
        assert clear_caches.call_count == 4


def test_unregistered_global_backend_warns_once_and_uses_the_default(x):
    op = two_backends()
    bekc.set_backend("cpu", "warp")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert added(op, x) == 1.0
        assert added(op, x + 1.0) == 1.0       # lowered again, not warned again
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert all(w.category is UserWarning for w in caught)
    assert "'warp'" in messages[0] and "ignoring it" in messages[0] and op.name in messages[0]


def test_warn_backend_once_deduplicates_messages():
    op = XLACustomKernel(unique_prefix("warn"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op._warn_backend_once("message-A")
        op._warn_backend_once("message-A")
        op._warn_backend_once("message-B")
    assert [str(w.message) for w in caught] == ["message-A", "message-B"]


# =========================================================================== per-primitive defaults
def test_set_default_is_read_back_per_platform():
    op = two_backends()
    op.set_default("cpu", "b")
    assert op.get_default("cpu") == "b" and op.get_default("tpu") is None


def test_set_default_clears_jax_caches_only_when_it_changes():
    op = two_backends()
    with mock.patch("jax.clear_caches") as clear_caches:
        op.set_default("cpu", "a")             # already the default
        assert clear_caches.call_count == 0
        op.set_default("cpu", "b")
        assert clear_caches.call_count == 1
        op.def_kernel("c", "cpu", adds(3.0), asdefault=True)
        assert clear_caches.call_count == 2
    assert op.defaults == {"cpu": "c"}


def test_available_backends():
    op = two_backends()
    assert op.available_backends("cpu") == ["a", "b"]
    assert op.available_backends("gpu") == []


def test_an_empty_backend_on_the_call_is_refused(x):
    op = two_backends()
    with pytest.raises(ValueError, match="backend cannot be an empty string"):
        op(x, outs=OUTS, backend="")


# =========================================================================== brainevent's registration methods
@pytest.mark.parametrize("method, args, backend, platform", [
    ("def_numba_kernel", (), "numba", "cpu"),
    ("def_warp_kernel", (), "warp", "gpu"),
    ("def_triton_kernel", (), "triton", "gpu"),
    ("def_cuda_raw_kernel", (), "cuda_raw", "gpu"),
    ("def_pallas_kernel", ("tpu",), "pallas", "tpu"),
    ("def_pallas_kernel", ("gpu",), "pallas", "gpu"),
])
def test_brainevents_registration_methods(method, args, backend, platform):
    op = XLACustomKernel(unique_prefix("methods"))
    getattr(op, method)(*args, adds(1.0))
    assert op.defaults == {platform: backend}
    getattr(op, method)(*args, adds(2.0), asdefault=True)
    assert op.available_backends(platform) == [backend]


def test_numba_kernel_runs_on_cpu(x):
    op = XLACustomKernel(unique_prefix("numba"))
    op.def_numba_kernel(adds(5.0))
    assert added(op, x) == 5.0


def test_pallas_kernels_are_for_gpu_or_tpu():
    op = XLACustomKernel(unique_prefix("pallas"))
    with pytest.raises(ValueError, match="'gpu' or 'tpu'"):
        op.def_pallas_kernel("cpu", adds(1.0))


def test_registration_type_errors():
    op = XLACustomKernel(unique_prefix("types"))
    with pytest.raises(TypeError, match="the backend must be a string, got int"):
        op.def_kernel(123, "cpu", adds(1.0))
    with pytest.raises(TypeError, match="the platform must be a string, got int"):
        op.def_kernel("numba", 123, adds(1.0))
    with pytest.raises(TypeError, match="must be callable, got str"):
        op.def_kernel("numba", "cpu", "not-a-callable")
    assert op.defaults == {}


def test_a_second_primitive_of_a_name_warns():
    name = unique_prefix("dup")
    XLACustomKernel(name)
    with pytest.warns(UserWarning, match=f"XLACustomKernel named '{name}' is already registered"):
        XLACustomKernel(name)


def test_unhashable_keyword_argument_names_the_argument(x):
    op = two_backends()
    with pytest.raises(TypeError, match="keyword argument 'some_list' is a list, which is "
                                        "unhashable; keyword arguments must be hashable"):
        op(x, outs=OUTS, some_list=[1, 2, 3])


# =========================================================================== lowering errors
def test_a_platform_without_kernels_is_a_fallback_exhausted_error():
    op = XLACustomKernel(unique_prefix("cpuonly"))
    op.def_kernel("a", "cpu", adds(1.0))

    def f(a):
        return op(a, outs=[jax.ShapeDtypeStruct(a.shape, a.dtype)])[0]

    with pytest.raises(bekc.KernelFallbackExhaustedError) as info:
        jax.export.export(jax.jit(f), platforms=["tpu"])(jax.ShapeDtypeStruct((4,), jnp.float32))
    assert str(info.value) == (
        f"{op.name}: no kernel for platform 'tpu'; kernels are registered for cpu only. "
        f"Register one with def_kernel(backend, 'tpu', generator), or run on a platform that "
        f"has one")
    assert isinstance(info.value, bekc.BekcError)


def test_no_kernel_anywhere_is_a_fallback_exhausted_error(x):
    op = XLACustomKernel(unique_prefix("empty"))
    with pytest.raises(bekc.KernelFallbackExhaustedError,
                       match="no kernel for platform 'cpu'; no kernel is registered for any "
                             "platform"):
        op(x, outs=OUTS)


def test_an_unknown_backend_on_the_call_is_a_fallback_exhausted_error(x):
    op = two_backends()
    with pytest.raises(bekc.KernelFallbackExhaustedError,
                       match=re.escape(f"{op.name}: no 'nope' kernel for cpu; registered: a, b")):
        op(x, outs=OUTS, backend="nope")


def boom(**kwargs):
    raise RuntimeError("boom")


def test_a_failing_generator_is_a_kernel_compilation_error(x):
    op = XLACustomKernel(unique_prefix("fails"))
    op.def_kernel("bad", "cpu", boom)
    op.def_kernel("good", "cpu", adds(1.0))
    with pytest.raises(bekc.KernelCompilationError) as info:
        op(x, outs=OUTS, backend="bad")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert str(info.value) == (
        f"{op.name}: the 'bad' kernel for cpu failed while lowering: RuntimeError: boom. Other "
        f"backends for cpu: good; pick one with backend='<name>' on the call, "
        f"{op.name}.set_default('cpu', '<name>') or bekc.set_backend('cpu', '<name>')")
    assert not isinstance(info.value, (TypeError, ValueError))


@pytest.mark.parametrize("kind", [TypeError, ValueError])
def test_a_failing_kernel_keeps_its_kind(x, kind):
    def generator(**kwargs):
        def kernel(a):
            raise kind("no float32 here")
        return kernel

    op = XLACustomKernel(unique_prefix("kind"))
    op.def_kernel("only", "cpu", generator)
    with pytest.raises(kind, match="Other backends for cpu: none") as info:
        jax.jit(lambda a: op(a, outs=OUTS))(x)
    assert isinstance(info.value, bekc.KernelCompilationError)
    assert caused_by(info.value, kind)  # under jit JAX puts its own stack trace in between


def caused_by(error, kind) -> bool:
    error = error.__cause__
    while error is not None and not isinstance(error, kind):
        error = error.__cause__
    return error is not None
