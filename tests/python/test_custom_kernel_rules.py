"""``bekc.XLACustomKernel`` under jax.grad, jax.jvp, jax.vmap and jax.jit, against brainevent's.

One op, ``y = a * x`` elementwise, is built twice from the same rules: with
``bekc.XLACustomKernel`` and with brainevent 0.2.1's own ``XLACustomKernel``
(the venv's). Its CPU kernel is a real ``bekc build`` of a ``.cpp`` file,
called through ``jax.ffi.ffi_call`` from a kernel generator that both classes
run. The op has a JVP rule per input (``def_jvp_rule2``), a transpose rule
(it is linear in each input) and a batching rule that makes one call of the
whole batch (the kernel works on any shape). Every transformation's result
is compared between the two classes and with NumPy.

The rest of brainevent's XLACustomKernel API is here too: ``def_jvp_rule``,
``register_general_batching`` (the default ``jax.lax.scan`` rule),
``def_call``/``call``, ``def_tags``, ``def_benchmark_data`` and
``benchmark``, and the names around it (``defjvp``,
``general_batching_rule``, ``list_registered_targets``, ``print_diagnostics``,
``CompiledModule``).
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.interpreters import ad  # noqa: E402

import bekc  # noqa: E402
from conftest import unique_prefix  # noqa: E402

brainevent_main = pytest.importorskip("brainevent._op.main")

MUL_CPP = r"""
#include "brainevent/common.h"

// y = a * x elementwise, any shape (float32).
// @BE mul arg arg ret
void mul(const BE::Tensor a, const BE::Tensor x, BE::Tensor y) {
    const float* pa = a.data_ptr<float>();
    const float* px = x.data_ptr<float>();
    float* py = y.data_ptr<float>();
    for (int64_t i = 0; i < y.numel(); ++i) py[i] = pa[i] * px[i];
}
"""

CLASSES = {"bekc": bekc.XLACustomKernel, "brainevent": brainevent_main.XLACustomKernel}


@pytest.fixture(scope="module")
def mul_target(bekc_bin):
    prefix = unique_prefix("rules")
    mod = bekc.load_cpp_inline(name="rules_mul", cpp_sources=MUL_CPP, target_prefix=prefix)
    assert mod.function_names == ["mul"]
    return f"{prefix}.mul"


def ffi_generator(target):
    """A kernel generator both classes run: bekc passes ``outs`` as
    ShapeDtypeStructs, brainevent as ShapedArrays."""
    def generator(outs, **kwargs):
        specs = [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in outs]
        return lambda a, x: jax.ffi.ffi_call(target, specs)(a, x)
    return generator


class MulOp:
    """``y = a * x`` as a primitive of class ``cls``, with brainevent-style rules."""

    def __init__(self, cls, target, *, batching=True):
        self.op = op = cls(unique_prefix("mul"))
        op.def_kernel("cpp", "cpu", ffi_generator(target))
        self.batched_calls = 0

        # d(a*x) = da * x + a * dx: one rule per input, each a call of the op.
        def jvp_a(t, a, x, *, outs, **kw):
            return op(t, x, outs=outs, **kw)

        def jvp_x(t, a, x, *, outs, **kw):
            return op(a, t, outs=outs, **kw)

        op.def_jvp_rule2(jvp_a, jvp_x)

        # Linear in each input: the cotangent of x is a * ct, of a is ct * x.
        def transpose(cts, a, x, *, outs, **kw):
            ct = ad.instantiate_zeros(cts[0])
            if ad.is_undefined_primal(x):
                return None, op(a, ct, outs=outs, **kw)[0]
            return op(ct, x, outs=outs, **kw)[0], None

        op.def_transpose_rule(transpose)

        def batch(args, axes, *, outs, **kw):
            self.batched_calls += 1
            size = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
            moved = [jnp.moveaxis(a, ax, 0) if ax is not None
                     else jnp.broadcast_to(a, (size,) + a.shape) for a, ax in zip(args, axes)]
            wide = [jax.ShapeDtypeStruct((size,) + tuple(o.shape), o.dtype) for o in outs]
            return op(*moved, outs=wide, **kw), [0] * len(outs)

        if batching:
            op.def_batching_rule(batch)

    def __call__(self, a, x):
        return self.op(a, x, outs=[jax.ShapeDtypeStruct(x.shape, x.dtype)])[0]


@pytest.fixture
def ax():
    rng = np.random.default_rng(7)
    a = rng.uniform(-2, 2, size=(4, 6)).astype(np.float32)
    x = rng.uniform(-2, 2, size=(4, 6)).astype(np.float32)
    return jnp.asarray(a), jnp.asarray(x)


def both(target, **kw):
    return {name: MulOp(cls, target, **kw) for name, cls in CLASSES.items()}


def assert_same(results, expected, rtol=1e-6):
    for name, got in results.items():
        for g, e in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=rtol, atol=1e-6,
                                       err_msg=name)
    bekc_leaves = jax.tree_util.tree_leaves(results["bekc"])
    be_leaves = jax.tree_util.tree_leaves(results["brainevent"])
    assert len(bekc_leaves) == len(be_leaves)
    for g, e in zip(bekc_leaves, be_leaves):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


# --------------------------------------------------------------------------- grad / jvp
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_grad_uses_the_jvp_and_transpose_rules(mul_target, ax, jit):
    a, x = ax
    c = jnp.linspace(0.5, 1.5, x.size, dtype=jnp.float32).reshape(x.shape)
    results = {}
    for name, mul in both(mul_target).items():
        g = jax.grad(lambda a, x, mul=mul: jnp.sum(mul(a, x) * c), argnums=(0, 1))
        results[name] = (jax.jit(g) if jit else g)(a, x)
    assert_same(results, (np.asarray(x) * np.asarray(c), np.asarray(a) * np.asarray(c)))


def test_jvp_forward_mode(mul_target, ax):
    a, x = ax
    ta, tx = jnp.ones_like(a), jnp.full_like(x, 2.0)
    results = {name: jax.jit(lambda a, x, mul=mul: jax.jvp(mul, (a, x), (ta, tx)))(a, x)
               for name, mul in both(mul_target).items()}
    an, xn = np.asarray(a), np.asarray(x)
    assert_same(results, (an * xn, 1.0 * xn + an * 2.0))


def test_grad_of_one_input_leaves_the_other_symbolic_zero(mul_target, ax):
    a, x = ax
    results = {name: jax.jit(jax.grad(lambda x, mul=mul: jnp.sum(mul(a, x) ** 2)))(x)
               for name, mul in both(mul_target).items()}
    an, xn = np.asarray(a), np.asarray(x)
    assert_same(results, 2 * an * xn * an, rtol=1e-5)


def test_second_order_grad(mul_target, ax):
    """grad of grad: the JVP rule's own calls of the op are differentiated again."""
    a, x = ax
    results = {}
    for name, mul in both(mul_target).items():
        inner = jax.grad(lambda x, mul=mul: jnp.sum(mul(a, x) ** 2))
        results[name] = jax.jit(jax.grad(lambda x: jnp.sum(inner(x))))(x)
    an = np.asarray(a)
    assert_same(results, 2 * an * an, rtol=1e-5)


# --------------------------------------------------------------------------- vmap
@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0), (1, None), (1, 0)])
def test_vmap_uses_the_batching_rule(mul_target, in_axes):
    rng = np.random.default_rng(11)
    shape_a = (3, 4, 6) if in_axes[0] == 0 else (4, 3, 6) if in_axes[0] == 1 else (4, 6)
    shape_x = (3, 4, 6) if in_axes[1] == 0 else (4, 6)
    a = jnp.asarray(rng.uniform(-1, 1, shape_a).astype(np.float32))
    x = jnp.asarray(rng.uniform(-1, 1, shape_x).astype(np.float32))
    ops = both(mul_target)
    results = {name: jax.jit(jax.vmap(mul, in_axes=in_axes))(a, x) for name, mul in ops.items()}
    an = np.moveaxis(np.asarray(a), in_axes[0], 0) if in_axes[0] is not None else np.asarray(a)
    xn = np.moveaxis(np.asarray(x), in_axes[1], 0) if in_axes[1] is not None else np.asarray(x)
    assert_same(results, an * xn)
    assert ops["bekc"].batched_calls == ops["brainevent"].batched_calls == 1


def test_vmap_of_grad(mul_target, ax):
    a, x = ax  # a batch of 4 rows
    results = {}
    for name, mul in both(mul_target).items():
        g = jax.grad(lambda a, x, mul=mul: jnp.sum(mul(a, x) ** 2), argnums=1)
        results[name] = jax.jit(jax.vmap(g))(a, x)
    an, xn = np.asarray(a), np.asarray(x)
    assert_same(results, 2 * an * an * xn, rtol=1e-5)


def test_default_batching_rule_runs_the_kernel_per_element(mul_target, ax):
    """Without def_batching_rule, vmap works through the general rule (a
    jax.lax.scan), as in brainevent; register_general_batching puts it back."""
    a, x = ax
    plain = both(mul_target, batching=False)
    results = {name: jax.jit(jax.vmap(mul, in_axes=(None, 0)))(a[0], x)
               for name, mul in plain.items()}
    assert_same(results, np.asarray(a[0]) * np.asarray(x))
    assert "scan" in str(jax.make_jaxpr(jax.vmap(plain["bekc"], in_axes=(None, 0)))(a[0], x))

    custom = MulOp(bekc.XLACustomKernel, mul_target)
    custom.op.register_general_batching()
    np.testing.assert_allclose(jax.vmap(custom)(a, x), np.asarray(a) * np.asarray(x))
    assert custom.batched_calls == 0


def test_general_batching_rule_with_nothing_batched(mul_target, ax):
    a, x = ax
    op = MulOp(bekc.XLACustomKernel, mul_target).op
    outs, dims = bekc.general_batching_rule(op.primitive, (a, x), (None, None),
                                            outs=(jax.core.ShapedArray(x.shape, x.dtype),))
    assert dims == [None]
    np.testing.assert_allclose(outs[0], np.asarray(a) * np.asarray(x))


# --------------------------------------------------------------------------- other JVP forms
def test_def_jvp_rule_takes_primals_and_tangents(ax):
    a, x = ax
    op = bekc.XLACustomKernel(unique_prefix("sq"))
    op.def_kernel("jnp", "cpu", lambda outs: (lambda v: [v * v]))

    def jvp(primals, tangents, **params):
        (v,), (t,) = primals, tangents
        return op.primitive.bind(v, **params), [2.0 * v * ad.instantiate_zeros(t)]

    op.def_jvp_rule(jvp)
    f = lambda v: jnp.sum(op(v, outs=[jax.ShapeDtypeStruct(v.shape, v.dtype)])[0])  # noqa: E731
    np.testing.assert_allclose(jax.jit(jax.grad(f))(x), 2 * np.asarray(x), rtol=1e-6)


def test_defjvp_checks_the_rules(ax):
    a, x = ax
    op = bekc.XLACustomKernel(unique_prefix("two"))
    op.def_kernel("jnp", "cpu", lambda outs: (lambda u, v: [u * v]))
    outs = [jax.ShapeDtypeStruct(x.shape, x.dtype)]
    bekc.defjvp(op, lambda t, u, v, **kw: [t * v])  # one rule for two inputs
    with pytest.raises(ValueError, match="has 2 inputs but 1 JVP rules were given"):
        jax.jvp(lambda u, v: op(u, v, outs=outs)[0], (a, x), (a, x))
    bekc.defjvp(op, lambda t, u, v, **kw: t * v, None)  # not one tangent per output
    with pytest.raises(TypeError, match="returned a ArrayImpl; a primitive with several"):
        jax.jvp(lambda u, v: op(u, v, outs=outs)[0], (a, x), (a, x))
    with pytest.raises(TypeError, match="defjvp needs a JAX primitive"):
        bekc.defjvp("not a primitive", None)


# --------------------------------------------------------------------------- call, tags, benchmark
def _broken(outs, **kwargs):
    raise RuntimeError("this backend is broken")


def _two_backend_op(cls, target):
    op = cls(unique_prefix("bench"))
    op.def_kernel("cpp", "cpu", ffi_generator(target))
    op.def_kernel("jnp", "cpu", lambda outs, **kw: (lambda a, x: [a * x]))
    op.def_kernel("broken", "cpu", _broken)

    def call(a, x, *, backend=None):
        return op(a, x, outs=[jax.ShapeDtypeStruct(x.shape, x.dtype)], backend=backend)[0]

    op.def_call(call)
    op.def_tags("elementwise", "float")
    op.def_benchmark_data(lambda *, platform: [
        bekc.BenchmarkConfig(
            f"n={n}", (jnp.full((n,), 2.0, jnp.float32), jnp.full((n,), 3.0, jnp.float32)),
            data_kwargs={"n": n}) for n in (8, 64)])
    return op


def test_call_and_tags(mul_target, ax):
    a, x = ax
    op = _two_backend_op(bekc.XLACustomKernel, mul_target)
    np.testing.assert_allclose(op.call(a, x), np.asarray(a) * np.asarray(x))
    np.testing.assert_allclose(op.call(a, x, backend="jnp"), np.asarray(a) * np.asarray(x))
    assert op._tags == {"elementwise", "float"}
    assert op.available_backends("cpu") == ["cpp", "jnp", "broken"]
    assert op.available_backends("tpu") == []
    with pytest.raises(ValueError, match="no call function; register one with def_call"):
        bekc.XLACustomKernel(unique_prefix("nocall")).call(a, x)


def test_benchmark_matches_brainevents_records(mul_target, capsys):
    got = {}
    for name, cls in CLASSES.items():
        op = _two_backend_op(cls, mul_target)
        result = op.benchmark(platform="cpu", n_warmup=1, n_runs=3)
        got[name] = [(r.platform, r.backend, r.label, r.success, r.data_kwargs)
                     for r in result.records]
        for r in result.records:
            if r.success:
                assert 0 < r.min_ms <= r.mean_ms and r.std_ms >= 0
            else:
                assert r.error.startswith("KernelCompilation") and np.isnan(r.mean_ms)
        assert result.fastest().backend in ("cpp", "jnp")
        assert result.fastest(label="n=64").label == "n=64"
    assert got["bekc"] == got["brainevent"]
    assert [b for _, b, label, ok, _ in got["bekc"] if label == "n=8"] == ["cpp", "jnp", "broken"]
    assert [ok for *_, ok, _ in got["bekc"]] == [True, True, False] * 2
    assert "mismatch" not in capsys.readouterr().out  # cpp and jnp agree


def test_benchmark_errors(mul_target):
    op = _two_backend_op(bekc.XLACustomKernel, mul_target)
    with pytest.raises(bekc.KernelCompilationError):
        op.benchmark(platform="cpu", n_warmup=0, n_runs=1, backends=["broken"],
                     catch_errors=False)
    with pytest.raises(ValueError, match="no backends registered for platform 'tpu'"):
        op.benchmark(platform="tpu")
    bare = bekc.XLACustomKernel(unique_prefix("bare"))
    bare.def_call(lambda *a, **k: None)
    with pytest.raises(bekc.BenchmarkDataFnNotProvidedError, match="def_benchmark_data"):
        bare.benchmark(platform="cpu")


# --------------------------------------------------------------------------- names around it
def test_registered_targets_and_diagnostics(mul_target, capsys):
    assert mul_target in bekc.list_registered_targets()
    assert bekc.list_registered_targets() == sorted(bekc.registered_targets())
    bekc.print_diagnostics()
    out = capsys.readouterr().out
    assert "bekc binary: " in out and "host compiler" in out
    assert f"Registered FFI targets: {len(bekc.registered_targets())}" in out
    assert bekc.CompiledModule is bekc.Module
