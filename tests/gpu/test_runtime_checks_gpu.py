"""Run-time checks of a call on the GPU: data_ptr<T>()'s width check on the host
and in device code, same-width and byte views, empty arrays, and the
handler's own checks, for CUDA targets.

The CPU side is tests/python/test_runtime_checks.py. A failed check in device
code traps, which ruins the process's CUDA context, so that case runs in a
child process; the others throw on the host before anything is launched and
run here.
"""
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bekc
from conftest import HERE, build, x64

REPO = HERE.parents[1]
QUICKSTART = REPO / "examples" / "quickstart" / "gpu_kernels.cu"
HINT = "; check the dtype first, or dispatch on it (BE_DISPATCH_*)"

KERNELS = r"""
#include <cuda_runtime.h>

#include <cstddef>

#include "brainevent/common.h"

__global__ void scale_kernel(const double* x, double* out, int64_t n, double factor) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = x[i] * factor;
}

// Written for float64 only, with no dtype check: data_ptr<double>() on the
// host refuses a float32 call before the launch.
// @BE scale_f64 arg ret attr.factor:float64 stream
void scale_f64(const BE::Tensor x, BE::Tensor out, double factor, int64_t stream) {
    const double* in = x.data_ptr<double>();
    double* o = out.data_ptr<double>();
    const int64_t n = x.numel();
    if (n == 0) return;
    scale_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(in, o, n, factor);
    BE_CHECK_KERNEL_LAUNCH();
}

__global__ void scale_in_kernel(const BE::Tensor x, BE::Tensor out, double factor) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < x.numel()) out.data_ptr<double>()[i] = x.data_ptr<const double>()[i] * factor;
}

// The same, with data_ptr<double>() in device code: a float32 call traps there.
// @BE scale_f64_device arg ret attr.factor:float64 stream
void scale_f64_device(const BE::Tensor x, BE::Tensor out, double factor, int64_t stream) {
    const int64_t n = x.numel();
    if (n == 0) return;
    scale_in_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(x, out, factor);
    BE_CHECK_KERNEL_LAUNCH_SYNC();
}

__global__ void bits_kernel(const BE::Tensor x, BE::Tensor out) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < x.numel()) out.data_ptr<uint16_t>()[i] = x.data_ptr<const uint16_t>()[i];
}

// float16 or bfloat16 bits as uint16_t, in device code: the same width.
// @BE half_bits arg ret stream
void half_bits(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    const int64_t n = x.numel();
    if (n == 0) return;
    bits_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(x, out);
    BE_CHECK_KERNEL_LAUNCH();
}

__global__ void bytes_kernel(const BE::Tensor x, BE::Tensor out) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    const char* c = x.data_ptr<const char>();
    const std::byte* b = x.data_ptr<const std::byte>();
    if (static_cast<const void*>(b) != x.data_ptr<const void>()) return;
    if (i < static_cast<int64_t>(x.nbytes()))
        out.data_ptr<unsigned char>()[i] = static_cast<unsigned char>(c[i]);
}

// The bytes of an input of any dtype, through the byte views, in device code.
// @BE copy_bytes arg ret stream
void copy_bytes(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    BE_CHECK(out.nbytes() == x.nbytes())
        << "out has " << out.nbytes() << " bytes, x " << x.nbytes();
    const int64_t n = static_cast<int64_t>(x.nbytes());
    if (n == 0) return;
    bytes_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(x, out);
    BE_CHECK_KERNEL_LAUNCH();
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory, cache_dir):
    src = tmp_path_factory.mktemp("runtime-checks-gpu") / "runtime_checks_gpu.cu"
    src.write_text(KERNELS)
    out = build(src, "--arch", "native", "--target-prefix", "rc_gpu", cache_dir=cache_dir)
    return {"source": str(src), "manifest": out["manifest"], "mod": bekc.load(out["manifest"])}


@pytest.fixture(scope="module")
def quick(cache_dir):
    out = build(QUICKSTART, "--arch", "native", "--target-prefix", "rc_quickstart_gpu",
                cache_dir=cache_dir)
    return bekc.load(out["manifest"])


def line_in(path, needle):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if needle in line:
                return n
    raise AssertionError(f"{needle!r} not in {path}")


def error_of(f):
    with pytest.raises(Exception) as info:
        jax.block_until_ready(f())
    return str(info.value)


# --------------------------------------------------------------------------- data_ptr<T>()
def test_host_data_ptr_of_another_width_raises_and_process_lives(kernels):
    mod, src = kernels["mod"], kernels["source"]
    x = jnp.ones(4096, jnp.float32)
    err = error_of(lambda: mod.scale_f64(x, factor=2.0))
    line = line_in(src, "const double* in = x.data_ptr<double>()")
    assert f"rc_gpu.scale_f64: {src}:{line}: data_ptr<double>() on argument 0 (float32): double " \
           "has 8 bytes, float32 elements have 4" + HINT in err, err
    with x64():
        good = jnp.arange(4096, dtype=jnp.float64)
        np.testing.assert_allclose(mod.scale_f64(good, factor=2.0), np.arange(4096) * 2.0)
        err = error_of(lambda: mod.scale_f64(good, out=jax.ShapeDtypeStruct((4096,), jnp.int32),
                                             factor=2.0))
        assert "data_ptr<double>() on result 0 (int32): double has 8 bytes, int32 elements " \
               "have 4" in err, err
        # Empty arrays too: the width is wrong whatever the size.
        err = error_of(lambda: mod.scale_f64.call([jnp.zeros(0, jnp.float32)], {"factor": 1.0},
                                                  has_side_effect=True))
        assert "data_ptr<double>() on argument 0 (float32)" in err, err


def test_device_data_ptr_of_another_width_prints_and_traps(kernels):
    # The trap ruins this process's CUDA context: run it in a child, without command
    # buffers (BE_CHECK_KERNEL_LAUNCH_SYNC may not synchronise inside a graph capture).
    script = textwrap.dedent(f"""
        import jax, jax.numpy as jnp
        import bekc
        mod = bekc.load({kernels['manifest']!r})
        try:
            jax.block_until_ready(mod.scale_f64_device(jnp.ones(300, jnp.float32), factor=2.0))
            print("NO ERROR", flush=True)
        except Exception as e:
            print("RAISED:", e, flush=True)
    """)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "python"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    out = done.stdout + done.stderr
    line = line_in(kernels["source"], "out.data_ptr<double>()[i] = x.data_ptr<const double>()")
    # The first data_ptr<double>() a thread reaches fails; both name float32.
    assert f"{kernels['source']}:{line}: element size mismatch: data_ptr<double>() on " in out, out
    assert "(float32): double has 8 bytes, float32 elements have 4 [block (" in out, out
    assert "RAISED:" in out and "rc_gpu.scale_f64_device" in out, out
    assert "kernel execution failed" in out, out


def test_device_same_width_and_byte_views_are_allowed(kernels):
    mod = kernels["mod"]
    h = jnp.asarray(np.linspace(-3, 3, 1000).astype(np.float16))
    bits = mod.half_bits(h, out=jax.ShapeDtypeStruct(h.shape, jnp.uint16))
    np.testing.assert_array_equal(np.asarray(bits), np.asarray(h).view(np.uint16))
    b = h.astype(jnp.bfloat16)
    np.testing.assert_array_equal(
        np.asarray(mod.half_bits(b, out=jax.ShapeDtypeStruct(b.shape, jnp.uint16))),
        np.asarray(b).view(np.uint16))
    with x64():
        for x in [jnp.arange(999, dtype=jnp.float64), jnp.arange(10, dtype=jnp.int16),
                  jnp.asarray([1 + 2j, 3 - 4j], jnp.complex64), jnp.asarray([True, False])]:
            raw = mod.copy_bytes(x, out=jax.ShapeDtypeStruct((x.nbytes,), jnp.uint8))
            assert np.asarray(raw).tobytes() == np.asarray(x).tobytes(), x.dtype


# --------------------------------------------------------------------------- empty arrays, examples
@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)])
def test_empty_arrays_reach_the_quickstart_kernels(quick, kernels, shape):
    # has_side_effect keeps XLA from dropping a call whose every array is empty;
    # the examples return before launching zero blocks, which CUDA refuses.
    x = jnp.zeros(shape, jnp.float32)
    assert quick.vector_add.call([x, x], has_side_effect=True).shape == shape
    assert quick.scale_by.call([x], {"scale_factor": 2.0}, has_side_effect=True).shape == shape
    empty = jax.ShapeDtypeStruct((0,), jnp.uint8)
    assert kernels["mod"].copy_bytes.call([x], out=empty, has_side_effect=True).shape == (0,)
    x = jnp.arange(5, dtype=jnp.float32)
    np.testing.assert_allclose(quick.vector_add(x, x), 2 * np.arange(5))


def test_quickstart_checks_dtypes_and_sizes(quick):
    x = jnp.ones(1024, jnp.float32)
    err = error_of(lambda: quick.vector_add(x, jnp.ones(1000, jnp.float32)))
    assert "rc_quickstart_gpu.vector_add: " in err and "sizes differ: 1024 + 1000 -> 1024" in err
    err = error_of(lambda: quick.vector_add(x, x.astype(jnp.int32)))
    assert "vector_add takes float32, got float32 + int32 -> float32" in err, err
    err = error_of(lambda: quick.scale_by(x, out=jax.ShapeDtypeStruct((10,), jnp.float32),
                                          scale_factor=2.0))
    assert "out has 10 elements, x 1024" in err, err
    with x64():
        err = error_of(lambda: quick.scale_by(x, out=jax.ShapeDtypeStruct((1024,), jnp.float64),
                                              scale_factor=2.0))
        assert "out must be float32, got float64" in err, err
    np.testing.assert_allclose(quick.scale_by(x, scale_factor=3.0), 3.0)


# ------------------------------------------------------------------ the handler's own checks
def test_handler_checks_counts_attributes_and_rank_on_cuda(quick):
    x = jnp.ones(16, jnp.float32)
    call = jax.ffi.ffi_call("rc_quickstart_gpu.scale_by", jax.ShapeDtypeStruct(x.shape, x.dtype))
    assert "scale_by: expected 1 attributes, got 0" in error_of(lambda: call(x))
    assert "scale_by: expected 1 attributes, got 2" in error_of(
        lambda: call(x, scale_factor=np.float32(1), extra=np.float32(1)))
    assert "scale_by: expected 1 arguments, got 2" in error_of(
        lambda: call(x, x, scale_factor=np.float32(1)))
    assert "attribute 'scale_factor' must be float32, got int32" in error_of(
        lambda: call(x, scale_factor=np.int32(1)))
    y = jnp.ones((1,) * 9, jnp.float32)
    assert "argument 0 has rank 9; BE::Tensor supports 0 to 8 dimensions" in error_of(
        lambda: quick.scale_by(y, scale_factor=1.0))
    np.testing.assert_allclose(call(x, scale_factor=np.float32(2)), 2.0)
