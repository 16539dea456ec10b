"""On the GPU: the seed tutorial (brainevent's "Custom CUDA kernels")
run as written with `import bekc as brainevent`, on CUDA and on the CPU."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bekc as brainevent
from conftest import BEKC

os.environ.setdefault("BEKC", BEKC)

VECTOR_ADD_SRC = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = a[idx] + b[idx];
}

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b,
                BE::Tensor out, int64_t stream) {
    int n = a.numel();
    add_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(a.data_ptr()),
        static_cast<const float*>(b.data_ptr()),
        static_cast<float*>(out.data_ptr()), n);
}
"""

SCALE_SRC = r"""
#include <cuda_runtime.h>
#include "brainevent/common.h"

__global__ void scale_kernel(const float* x, float* out, int n, float factor) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) out[idx] = x[idx] * factor;
}

// @BE scale_by arg ret attr.scale_factor:float32 stream
void scale_by(const BE::Tensor x, BE::Tensor out,
              float scale_factor, int64_t stream) {
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(x.data_ptr()),
        static_cast<float*>(out.data_ptr()), n, scale_factor);
    BE_CHECK_KERNEL_LAUNCH();
}
"""

CPU_SRC = r"""
#include "brainevent/common.h"
// @BE cpu_add
void cpu_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {
    for (int64_t i = 0; i < a.numel(); ++i)
        out.data_ptr<float>()[i] = a.data_ptr<float>()[i] + b.data_ptr<float>()[i];
}
// @BE cpu_count arg ret attr.n:int32
void cpu_count(const BE::Tensor a, BE::Tensor out, int n) {
    for (int64_t i = 0; i < a.numel(); ++i) out.data_ptr<float>()[i] = a.data_ptr<float>()[i] * n;
}
"""

a = jnp.ones(1024, dtype=jnp.float32)
b = jnp.full(1024, 2.0, dtype=jnp.float32)


def test_1_vector_add():
    mod = brainevent.load_cuda_inline(name="my_kernels", cuda_sources=VECTOR_ADD_SRC,
                                      functions=None)
    result = jax.ffi.ffi_call("my_kernels.vector_add", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)
    np.testing.assert_array_equal(result[:5], [3.0] * 5)
    # Idempotent: the same call again registers nothing new and still works.
    again = brainevent.load_cuda_inline(name="my_kernels", cuda_sources=VECTOR_ADD_SRC)
    assert again.library_path == mod.library_path


def test_2_scalar_attributes_and_casting():
    brainevent.load_cuda_inline(name="scale_ops", cuda_sources=SCALE_SRC)
    result = jax.ffi.ffi_call("scale_ops.scale_by", jax.ShapeDtypeStruct(a.shape, a.dtype))(
        a, scale_factor=np.float32(3.0))
    np.testing.assert_array_equal(result[:5], [3.0] * 5)
    mod = brainevent.load_cuda_inline(name="scale_ops", cuda_sources=SCALE_SRC)
    np.testing.assert_array_equal(mod.scale_by(a, scale_factor=3.0)[:5], [3.0] * 5)


def test_3_compiler_options():
    mod = brainevent.load_cuda_inline(name="fast_kernels", cuda_sources=SCALE_SRC,
                                      optimization_level=3, use_fast_math=True)
    assert mod.manifest["flags"]["fast_math"] is True
    x = jnp.asarray(np.random.default_rng(0).uniform(0.5, 2, 4096), dtype=jnp.float32)
    np.testing.assert_allclose(mod.scale_by(x, scale_factor=0.5), x * 0.5, rtol=1e-6)


def test_4_file_and_jit(tmp_path):
    path = tmp_path / "my_kernel.cu"
    path.write_text(VECTOR_ADD_SRC)
    brainevent.load_cuda_file(str(path), name="file_kernels")

    @jax.jit
    def add_jit(a, b):
        return jax.ffi.ffi_call("file_kernels.vector_add", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)

    np.testing.assert_array_equal(add_jit(a, b)[:5], [3.0] * 5)


def test_cpu_kernel_next_to_cuda():
    mod = brainevent.load_cpp_inline(name="cpu_ops", cpp_sources=CPU_SRC)
    x = jax.device_put(jnp.arange(1, 9, dtype=jnp.float32), jax.devices("cpu")[0])
    with jax.default_device(jax.devices("cpu")[0]):
        np.testing.assert_array_equal(jax.jit(mod.cpu_add)(x, x), 2 * np.arange(1, 9))
        np.testing.assert_array_equal(mod.cpu_count(x, n=5), 5 * np.arange(1, 9))


def test_conflicting_registration_names_both_libraries():
    brainevent.load_cuda_inline(name="clash", cuda_sources=VECTOR_ADD_SRC)
    other = VECTOR_ADD_SRC.replace("a[idx] + b[idx]", "a[idx] - b[idx]")
    with pytest.raises(brainevent.TargetConflictError, match="--target-prefix"):
        brainevent.load_cuda_inline(name="clash", cuda_sources=other)
