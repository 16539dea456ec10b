"""bekc-built CUDA handlers called by JAX under jax.jit on a GPU."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import HERE, build, x64
import bekc

rng = np.random.default_rng(1234)


def rand(shape, dtype=np.float32, lo=0.5, hi=2.0):
    """Random values that are never zero."""
    return jnp.asarray(rng.uniform(lo, hi, shape).astype(dtype))


def test_vector_add_jit(e2e):
    a, b = rand(4097), rand(4097)
    out = jax.jit(lambda a, b: jax.ffi.ffi_call(
        "cuda_e2e.vector_add", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b))(a, b)
    np.testing.assert_allclose(out, a + b, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(e2e.vector_add)(a, b), a + b, rtol=1e-6)


def test_scale_by_float_attr_cast_by_bekc(e2e):
    x = rand(1000)
    np.testing.assert_allclose(jax.jit(lambda x: e2e.scale_by(x, scale_factor=3.0))(x), x * 3.0,
                               rtol=1e-6)


def test_multi_output_split(e2e):
    x = rand(2000, lo=-2.0, hi=2.0)
    pos, neg = jax.jit(lambda x: e2e.split(x, out=[jax.ShapeDtypeStruct(x.shape, x.dtype)] * 2))(x)
    np.testing.assert_array_equal(pos, jnp.maximum(x, 0))
    np.testing.assert_array_equal(neg, jnp.minimum(x, 0))


def test_every_attribute_type(e2e):
    x = rand(3)
    attrs = dict(b=True, i8=-7, u8=200, i16=-30000, u16=60000, i32=-2_000_000_000,
                 u32=4_000_000_000, i64=-(2**40), u64=2**41, f32=1.5, f64=-2.25, h=0.5, bh=-3.0)
    with x64():
        out = e2e.all_attrs(x, out=jax.ShapeDtypeStruct((13,), jnp.float64), **attrs)
    half_bits = float(np.float16(0.5).view(np.uint16))
    bf16_bits = float(np.uint16(np.float32(-3.0).view(np.uint32) >> 16))
    want = [1, -7, 200, -30000, 60000, -2_000_000_000, 4_000_000_000, -(2**40), 2**41, 1.5,
            -2.25, half_bits, bf16_bits]
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want, dtype=np.float64))


def test_two_d_input(e2e):
    x = rand((37, 53))
    out = jax.jit(e2e.rows)(x)
    np.testing.assert_allclose(out, x * 10 + jnp.arange(37, dtype=jnp.float32)[:, None], rtol=1e-6)


def test_zero_d_input(e2e):
    x = jnp.float32(1.75)
    np.testing.assert_allclose(jax.jit(e2e.scalar_affine)(x), 1.75 * 2 + 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dispatch_floating(e2e, dtype):
    with x64():
        x = rand(999, dtype=dtype)
        out = jax.jit(lambda x: e2e.axpb(x, a=2.5, b=-1.25))(x)
        assert out.dtype == dtype
        # The GPU fuses a*x+b (FMA): compare in the input's precision, with an
        # absolute tolerance for the cancellation near zero.
        eps = np.finfo(dtype).eps
        np.testing.assert_allclose(out, 2.5 * np.asarray(x) - 1.25, rtol=8 * eps, atol=8 * eps)


def test_wrong_attribute_dtype_raises_and_process_lives(e2e):
    x = rand(16)
    call = jax.ffi.ffi_call("cuda_e2e.scale_by", jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(Exception, match=r"attribute 'scale_factor' must be float32, got int32"):
        jax.block_until_ready(call(x, scale_factor=np.int32(3)))
    np.testing.assert_allclose(e2e.scale_by(x, scale_factor=2.0), x * 2, rtol=1e-6)


def test_failing_be_check_raises_and_process_lives(e2e):
    x = rand(16)
    with pytest.raises(Exception, match=r"cuda_e2e.checked_scale: .*n must be positive, got -3"):
        jax.block_until_ready(e2e.checked_scale(x, n=-3))
    np.testing.assert_allclose(e2e.checked_scale(x, n=4), x * 4, rtol=1e-6)


def test_fori_loop_1000_calls_with_command_buffers(e2e):
    # XLA_FLAGS (set by run_all.sh) turns command buffers on for custom calls.
    x = rand(1 << 16)
    body = lambda i, v: e2e.increment(v)
    out = jax.jit(lambda x: jax.lax.fori_loop(0, 1000, body, x))(x)
    np.testing.assert_allclose(out, x + 1000, rtol=1e-5)


def test_no_cuda_graph_manifest_works(e2e, cache_dir):
    same = build(HERE / "kernels" / "cuda_e2e.cu", "--arch", "native", "--no-cuda-graph",
                 cache_dir=cache_dir)
    assert same["cache_hit"], "--no-cuda-graph must reuse the cached library"
    assert os.path.realpath(same["library"]) == os.path.realpath(str(e2e.library_path))
    # Another prefix is another module (target names are compiled in); call it.
    out = build(HERE / "kernels" / "cuda_e2e.cu", "--arch", "native", "--no-cuda-graph",
                "--target-prefix", "nograph", cache_dir=cache_dir)
    mod = bekc.load(out["manifest"])
    assert all(t["symbol"].endswith("_nograph") for t in mod.targets.values())
    x = rand(100)
    np.testing.assert_allclose(jax.jit(lambda x: jax.lax.fori_loop(0, 10, lambda i, v: mod.increment(v), x))(x),
                               x + 10, rtol=1e-6)


def test_relocatable_device_code_across_inputs(cache_dir):
    """-rdc=true: a kernel calls a __device__ function of another input, and
    the library's device link (nvlink, for the build's architectures) joins
    them. The library built before that change ran too, though its device
    link had none of the GPU's architectures (nvlink warned "SM Arch
    ('sm_75') not found"): what the change adds is the link-time check, see
    tests/integration/test_build_plan.py."""
    kernels = HERE / "kernels" / "rdc"
    out = build(kernels / "caller.cu", kernels / "callee.cu", "--name", "rdc_pair",
                "--arch", "native", "--cuda-flag=-rdc=true", cache_dir=cache_dir)
    lib = bekc.load(out["manifest"])
    x = rand(3001)
    np.testing.assert_allclose(jax.jit(lib.shifted)(x), x * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(lib.shift_all)(x), x * 2 + 1, rtol=1e-6)
