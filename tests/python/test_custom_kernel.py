"""``bekc.XLACustomKernel`` on the CPU: one primitive, an implementation per platform.

The CPU implementations are real ``bekc build`` outputs of a ``.cpp`` file
written by this module (a leaky ReLU with a float attribute ``alpha``, and a
kernel with two outputs), or plain Python kernel generators. Everything runs
through JAX on the CPU, eagerly and under ``jax.jit``, and is compared with
NumPy. Skipped only when the bekc binary cannot be found (``bekc_bin`` in
conftest.py).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import bekc  # noqa: E402
from bekc import KernelFunction, XLACustomKernel  # noqa: E402
from conftest import unique_prefix  # noqa: E402

KERNELS_CPP = r"""
#include "brainevent/common.h"

// y = x where x > 0, alpha * x elsewhere (float32).
// @BE leaky_relu arg ret attr.alpha:float32
void leaky_relu(const BE::Tensor x, BE::Tensor y, float alpha) {
    BE_CHECK(x.dtype() == BE::DType::Float32) << "leaky_relu takes float32";
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0 ? in[i] : alpha * in[i];
}

// The positive and the negative parts of x, as two outputs.
// @BE split_sign arg ret ret
void split_sign(const BE::Tensor x, BE::Tensor pos, BE::Tensor neg) {
    const float* in = x.data_ptr<float>();
    float* p = pos.data_ptr<float>();
    float* n = neg.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        p[i] = in[i] > 0 ? in[i] : 0.0f;
        n[i] = in[i] < 0 ? in[i] : 0.0f;
    }
}
"""


@pytest.fixture(scope="module")
def cpu_module(bekc_bin, tmp_path_factory):
    """The kernels above, built by the real bekc and loaded (registered for cpu)."""
    src = tmp_path_factory.mktemp("custom_kernel_src") / "ck_kernels.cpp"
    src.write_text(KERNELS_CPP)
    mod = bekc.load_cpp_file(str(src), target_prefix=unique_prefix("ck"))
    assert mod.platforms == ("cpu",)
    return mod


@pytest.fixture
def x():
    rng = np.random.default_rng(3)
    values = rng.uniform(0.25, 4.0, size=(5, 7)) * rng.choice([-1.0, 1.0], size=(5, 7))
    return jnp.asarray(values.astype(np.float32))


def sds(a):
    return jax.ShapeDtypeStruct(a.shape, a.dtype)


def leaky_relu_np(x, alpha):
    x = np.asarray(x)
    return np.where(x > 0, x, np.float32(alpha) * x)


def new_op(what="op"):
    return XLACustomKernel(unique_prefix(what))


def adds(constant):
    """A kernel generator whose kernel adds ``constant``: tells implementations apart."""
    def generator(outs, **kwargs):
        return lambda x: [x + constant]
    return generator


# =========================================================================== bekc functions
def test_bekc_function_eagerly(cpu_module, x):
    op = new_op("leaky")
    op.def_cpu_kernel(cpu_module.leaky_relu)
    out = op(x, outs=[sds(x)], alpha=0.1)
    assert isinstance(out, list) and len(out) == 1
    assert out[0].shape == x.shape and out[0].dtype == jnp.float32
    np.testing.assert_allclose(out[0], leaky_relu_np(x, 0.1), rtol=1e-6)


def test_one_struct_in_one_array_out(cpu_module, x):
    op = new_op("leaky")
    op.def_cpu_kernel(cpu_module.leaky_relu)
    y = op(x, outs=sds(x), alpha=0.25)
    assert isinstance(y, jax.Array) and y.shape == x.shape
    np.testing.assert_allclose(y, leaky_relu_np(x, 0.25), rtol=1e-6)


def test_bekc_function_under_jit_with_static_alpha(cpu_module, x):
    op = new_op("leaky")
    op.def_cpu_kernel(cpu_module.leaky_relu)
    f = jax.jit(lambda x, alpha: op(x * 2.0, outs=sds(x), alpha=alpha) - 1.0,
                static_argnames=("alpha",))
    for alpha in (0.1, 0.5, 2.0):  # each value reaches the kernel (no stale compilation)
        np.testing.assert_allclose(f(x, alpha=alpha), leaky_relu_np(2.0 * np.asarray(x), alpha)
                                   - 1.0, rtol=1e-6)


def test_bekc_function_with_two_outputs(cpu_module, x):
    op = new_op("split")
    op.def_cpu_kernel(cpu_module.split_sign)
    xn = np.asarray(x)

    pos, neg = op(x, outs=[sds(x), sds(x)])
    np.testing.assert_array_equal(pos, np.maximum(xn, 0))
    np.testing.assert_array_equal(neg, np.minimum(xn, 0))

    out = jax.jit(lambda x: op(x, outs=(sds(x), sds(x))))(x)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_array_equal(out[0] + out[1], xn)


def test_bekc_function_missing_attribute(cpu_module, x):
    op = new_op("leaky")
    op.def_cpu_kernel(cpu_module.leaky_relu)
    with pytest.raises(TypeError, match="missing attribute 'alpha'"):
        op(x, outs=sds(x))


# =========================================================================== kernel generators
def test_generator_receives_outs_and_kwargs(x):
    seen = []

    def generator(**kwargs):
        seen.append(kwargs)

        def kernel(a, b):
            return [a * kwargs["scale"] + b, (a - b).astype(jnp.int32)]
        return kernel

    op = new_op("gen")
    op.def_kernel("mine", "cpu", generator)
    y = x + 1.0
    outs = [sds(x), jax.ShapeDtypeStruct(x.shape, jnp.int32)]
    s, d = op(x, y, outs=outs, scale=3.0, label="hello")

    np.testing.assert_allclose(s, np.asarray(x) * 3.0 + np.asarray(y), rtol=1e-6)
    np.testing.assert_array_equal(d, (np.asarray(x) - np.asarray(y)).astype(np.int32))
    assert len(seen) == 1
    kw = seen[0]
    assert set(kw) == {"outs", "scale", "label"}  # not `backend`
    assert kw["scale"] == 3.0 and kw["label"] == "hello"
    assert isinstance(kw["outs"], list)
    assert all(isinstance(o, jax.ShapeDtypeStruct) for o in kw["outs"])
    assert [(o.shape, o.dtype) for o in kw["outs"]] == [(x.shape, jnp.float32),
                                                        (x.shape, jnp.int32)]


def test_generator_may_return_a_single_array(x):
    op = new_op("gen")
    op.def_kernel("mine", "cpu", lambda outs: (lambda a: a * 2.0))
    np.testing.assert_allclose(op(x, outs=sds(x)), np.asarray(x) * 2.0)
    np.testing.assert_allclose(jax.jit(lambda a: op(a, outs=[sds(a)])[0])(x), np.asarray(x) * 2.0)


def test_outs_pytree_structure_is_kept(x):
    op = new_op("gen")
    op.def_kernel("mine", "cpu", lambda outs: (lambda a: [a + 1.0, a + 2.0, a + 3.0]))
    out = op(x, outs={"a": sds(x), "b": (sds(x), sds(x))})
    assert isinstance(out, dict) and set(out) == {"a", "b"}
    assert isinstance(out["b"], tuple) and len(out["b"]) == 2
    # Leaves in pytree order: a, b[0], b[1].
    np.testing.assert_allclose(out["a"], np.asarray(x) + 1.0)
    np.testing.assert_allclose(out["b"][1], np.asarray(x) + 3.0)


def test_first_backend_is_the_default(x):
    op = new_op("defaults")
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0))
    assert op.defaults == {"cpu": "a"}
    np.testing.assert_allclose(op(x, outs=sds(x)), np.asarray(x) + 1.0)


def test_asdefault_switches_the_default(x):
    op = new_op("defaults")
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0), asdefault=True)
    assert op.defaults == {"cpu": "b"}
    np.testing.assert_allclose(op(x, outs=sds(x)), np.asarray(x) + 2.0)


def test_set_default_switches_the_default(x):
    op = new_op("defaults")
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0))
    op.set_default("cpu", "b")
    assert op.defaults == {"cpu": "b"}
    np.testing.assert_allclose(jax.jit(lambda a: op(a, outs=sds(a)))(x), np.asarray(x) + 2.0)


def test_a_later_default_reaches_calls_jax_has_seen_before(x):
    # The same call, before and after set_default: JAX's caches of the first
    # lowering must not keep the old backend, even in a function jitted
    # before (set_default clears JAX's caches, as brainevent's does).
    op = new_op("defaults")
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0))
    f = jax.jit(lambda a: op(a, outs=sds(a)))
    np.testing.assert_allclose(op(x, outs=sds(x)), np.asarray(x) + 1.0)
    np.testing.assert_allclose(f(x), np.asarray(x) + 1.0)
    op.set_default("cpu", "b")
    np.testing.assert_allclose(op(x, outs=sds(x)), np.asarray(x) + 2.0)
    np.testing.assert_allclose(jax.jit(lambda a: op(a, outs=sds(a)))(x), np.asarray(x) + 2.0)
    np.testing.assert_allclose(f(x), np.asarray(x) + 2.0)


def test_set_default_to_an_unknown_backend(x):
    op = new_op("defaults")
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0))
    with pytest.raises(ValueError, match=r"no 'zzz' kernel for cpu; registered: a, b"):
        op.set_default("cpu", "zzz")
    with pytest.raises(ValueError, match=r"no 'a' kernel for gpu; registered: none"):
        op.set_default("cuda", "a")
    assert op.defaults == {"cpu": "a"}


def test_backend_keyword_picks_one_at_call_time(x):
    op = new_op("backend")
    op.def_kernel("a", "cpu", adds(1.0))
    op.def_kernel("b", "cpu", adds(2.0))
    xn = np.asarray(x)
    np.testing.assert_allclose(op(x, outs=sds(x), backend="b"), xn + 2.0)
    np.testing.assert_allclose(op(x, outs=sds(x), backend="a"), xn + 1.0)
    f = jax.jit(lambda a, backend: op(a, outs=sds(a), backend=backend),
                static_argnames=("backend",))
    np.testing.assert_allclose(f(x, backend="b"), xn + 2.0)
    np.testing.assert_allclose(f(x, backend="a"), xn + 1.0)
    assert op.defaults == {"cpu": "a"}  # a call-time choice does not change the default


def test_unknown_backend_is_a_clear_error(x):
    op = new_op("backend")
    op.def_kernel("a", "cpu", adds(1.0))
    with pytest.raises(bekc.BekcError, match=re.escape(f"{op.name}: no 'nope' kernel for cpu; "
                                                       f"registered: a")):
        op(x, outs=sds(x), backend="nope")
    with pytest.raises(bekc.BekcError, match="no 'nope' kernel for cpu"):
        jax.jit(lambda a: op(a, outs=sds(a), backend="nope"))(x)


def test_cpu_implementation_is_chosen_on_cpu(cpu_module, x):
    gpu_calls = []

    def gpu_generator(outs, **kwargs):
        gpu_calls.append(kwargs)
        return lambda a: [a * 0.0]

    op = new_op("both")
    op.def_numba_cuda_kernel(gpu_generator)
    op.def_cpu_kernel(cpu_module.leaky_relu)
    assert op.defaults == {"gpu": "numba_cuda", "cpu": "bekc"}
    y = jax.jit(lambda a: op(a, outs=sds(a), alpha=0.3))(x)
    np.testing.assert_allclose(y, leaky_relu_np(x, 0.3), rtol=1e-6)
    assert gpu_calls == []


def test_cuda_is_another_name_for_gpu():
    op = new_op("alias")
    op.def_kernel("mine", "cuda", adds(1.0))
    op.def_cuda_kernel(adds(2.0))
    assert op.defaults == {"gpu": "mine"}
    op.set_default("cuda", "bekc")
    assert op.defaults == {"gpu": "bekc"}


# =========================================================================== keyword arguments
def test_traced_keyword_argument_under_jit(cpu_module, x):
    op = new_op("leaky")
    op.def_cpu_kernel(cpu_module.leaky_relu)
    f = jax.jit(lambda a, alpha: op(a, outs=sds(a), alpha=alpha))
    with pytest.raises(TypeError) as info:
        f(x, 0.1)
    message = str(info.value)
    assert "'alpha' is a traced value" in message
    assert "static_argnames" in message


def test_traced_value_inside_a_tuple_keyword_argument(x):
    op = new_op("gen")
    op.def_kernel("mine", "cpu", lambda outs, shift: (lambda a: [a]))
    f = jax.jit(lambda a, s: op(a, outs=sds(a), shift=(s, 1.0)))
    with pytest.raises(TypeError, match="'shift' is a traced value.*static_argnames"):
        f(x, 2.0)


@pytest.mark.parametrize("value", [[0.1], {"a": 1}, np.ones(2)])
def test_unhashable_keyword_argument(x, value):
    op = new_op("gen")
    op.def_kernel("mine", "cpu", lambda outs, **kw: (lambda a: [a]))
    with pytest.raises(TypeError, match="keyword arguments must be hashable"):
        op(x, outs=sds(x), alpha=value)


def test_tuple_keyword_argument_reaches_the_generator(x):
    op = new_op("gen")
    op.def_kernel("mine", "cpu", lambda outs, shift: (lambda a: [a + sum(shift)]))
    np.testing.assert_allclose(op(x, outs=sds(x), shift=(1.0, 2.0)), np.asarray(x) + 3.0)


# =========================================================================== registration errors
def _fake_function(platform):
    return KernelFunction({"name": f"fake_{platform.lower()}.k", "function": "k",
                           "platform": platform, "num_args": 1, "num_rets": 1, "attrs": []})


def test_cuda_kernel_function_cannot_be_the_cpu_implementation():
    op = new_op("refuse")
    with pytest.raises(ValueError, match=r"fake_cuda.k is a CUDA target; it cannot be the cpu "
                                         r"implementation"):
        op.def_cpu_kernel(_fake_function("CUDA"))
    assert op.defaults == {}


def test_cpu_kernel_function_cannot_be_the_gpu_implementation(cpu_module):
    op = new_op("refuse")
    with pytest.raises(ValueError, match=r"is a cpu target; it cannot be the gpu implementation"):
        op.def_cuda_kernel(cpu_module.leaky_relu)
    with pytest.raises(ValueError, match=r"is a cpu target"):
        op.def_kernel("x", "cuda", _fake_function("cpu"))
    op.def_cuda_kernel(_fake_function("CUDA"))  # the right platform is accepted
    assert op.defaults == {"gpu": "bekc"}


@pytest.mark.parametrize("platform", ["CPU", "rocm", ""])
def test_bad_platform_names(platform):
    op = new_op("refuse")
    with pytest.raises(ValueError, match=r"platform must be one of cpu, gpu, cuda, tpu, got "
                                         + re.escape(repr(platform))):
        op.def_kernel("mine", platform, adds(1.0))


def test_kernel_must_be_callable():
    op = new_op("refuse")
    with pytest.raises(TypeError, match="a kernel generator must be callable, got int"):
        op.def_cpu_kernel(42)


@pytest.mark.parametrize("name", ["", None, 3])
def test_name_must_be_a_non_empty_string(name):
    with pytest.raises(TypeError, match="needs a non-empty name"):
        XLACustomKernel(name)


# =========================================================================== call errors
def test_generator_returning_the_wrong_number_of_outputs(x):
    op = new_op("count")
    op.def_kernel("mine", "cpu", lambda outs: (lambda a: [a, a]))
    with pytest.raises(bekc.BekcError, match=re.escape(f"{op.name}: the mine kernel for cpu "
                                                       f"returned 2 arrays; outs lists 1")):
        op(x, outs=sds(x))
    with pytest.raises(bekc.BekcError, match="returned 1 arrays; outs lists 3"):
        op2 = new_op("count")
        op2.def_kernel("mine", "cpu", lambda outs: (lambda a: a))
        jax.jit(lambda a: op2(a, outs=[sds(a)] * 3))(x)


def test_generator_returning_the_wrong_shape_or_dtype(x):
    op = new_op("shape")
    op.def_kernel("mine", "cpu", lambda outs: (lambda a: [a[:2]]))
    with pytest.raises(bekc.BekcError, match=re.escape("returned output 0 as float32[2, 7]; outs "
                                                       "says float32[5, 7]")):
        op(x, outs=sds(x))
    op2 = new_op("dtype")
    op2.def_kernel("mine", "cpu", lambda outs: (lambda a: [a.astype(jnp.int32)]))
    with pytest.raises(bekc.BekcError, match="returned output 0 as int32"):
        jax.jit(lambda a: op2(a, outs=sds(a)))(x)


def test_no_cpu_implementation(x):
    op = new_op("gpuonly")
    op.def_kernel("mine", "gpu", adds(1.0))
    with pytest.raises(Exception, match=re.escape(op.name)):
        op(x, outs=sds(x))
    with pytest.raises(Exception):
        jax.jit(lambda a: op(a, outs=sds(a)))(x)


def test_nothing_registered(x):
    op = new_op("empty")
    assert op.defaults == {}
    with pytest.raises(Exception):
        op(x, outs=sds(x))
