"""End to end with the real ``bekc`` binary: CPU kernels built by ``bekc build``.

Every example of the CUDA tutorial (seed 000) rewritten as a CPU kernel, plus
reload, conflicts, attributes, errors and jit. Skipped only when the binary
cannot be found (see ``bekc_bin`` in conftest.py).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import bekc  # noqa: E402
from conftest import unique_prefix  # noqa: E402
from support.kernels import SCALE_CPP, VECTOR_ADD_CPP  # noqa: E402

pytestmark = pytest.mark.usefixtures("bekc_bin")

RNG = np.random.default_rng(7)


def rand(*shape):
    return jnp.asarray(RNG.uniform(-3.0, 3.0, size=shape).astype(np.float32))


# --------------------------------------------------------------------------- seed 000
def test_1_vector_add():
    name = unique_prefix("my_kernels")
    mod = bekc.load_cpp_inline(name=name, cpp_sources=VECTOR_ADD_CPP, functions=None)
    a, b = rand(1024), rand(1024)
    result = jax.ffi.ffi_call(f"{name}.vector_add", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)
    np.testing.assert_allclose(result, a + b, rtol=1e-6)
    np.testing.assert_allclose(mod.vector_add(a, b), a + b, rtol=1e-6)
    t = mod.targets[f"{name}.vector_add"]
    assert t["platform"] == "cpu" and t["arg_spec"] == ["arg", "arg", "ret"]


def test_2_scalar_attributes():
    name = unique_prefix("scale_ops")
    mod = bekc.load_cpp_inline(name=name, cpp_sources=SCALE_CPP)
    a = rand(1024)
    result = jax.ffi.ffi_call(f"{name}.scale", jax.ShapeDtypeStruct(a.shape, a.dtype))(
        a, factor=np.float32(3.0))
    np.testing.assert_allclose(result, a * 3.0, rtol=1e-6)
    np.testing.assert_allclose(mod.scale(a, factor=3.0), a * 3.0, rtol=1e-6)
    np.testing.assert_allclose(mod.scale(a, factor=2), a * 2.0, rtol=1e-6)
    assert mod.targets[f"{name}.scale"]["attrs"] == [{"name": "factor", "type": "float32"}]
    with pytest.raises(TypeError, match="did you mean 'factor'"):
        mod.scale(a, facter=3.0)


def test_3_compiler_options():
    name = unique_prefix("fast_kernels")
    mod = bekc.load_cpp_inline(name=name, cpp_sources=SCALE_CPP, optimization_level=3,
                               use_fast_math=True)
    a = rand(4096)
    np.testing.assert_allclose(mod.scale(a, factor=0.5), a * 0.5, rtol=1e-6)
    flags = mod.manifest["flags"]
    assert flags["opt_level"] == 3 and flags["fast_math"] is True
    slow = bekc.load_cpp_inline(name=unique_prefix("slow_kernels"), cpp_sources=SCALE_CPP,
                                optimization_level=0)
    assert slow.manifest["flags"]["opt_level"] == 0
    assert slow.manifest["key"] != mod.manifest["key"]  # flags are part of the cache key


def test_4_file_and_jit(tmp_path):
    src = tmp_path / "my_kernel.cpp"
    src.write_text(VECTOR_ADD_CPP)
    prefix = unique_prefix("file")
    mod = bekc.load_cpp_file(src, target_prefix=prefix)
    assert mod.name == "my_kernel"

    @jax.jit
    def add_jit(a, b):
        return jax.ffi.ffi_call(f"{prefix}.vector_add", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)

    a, b = rand(33, 7), rand(33, 7)
    np.testing.assert_allclose(add_jit(a, b), a + b, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(lambda x, y: mod.vector_add(x, y) * 2)(a, b),
                               (a + b) * 2, rtol=1e-6)
    # The bound function itself can be jitted (jax.jit keeps a weak reference).
    np.testing.assert_allclose(jax.jit(mod.vector_add)(a, b), a + b, rtol=1e-6)


def test_a_file_and_a_cache_below_a_directory_whose_name_is_not_utf8(tmp_path):
    """A Linux file name is bytes: load_cpp_file of a file below a directory
    named b"caf\\xe9", with the cache below one too, builds, loads and calls,
    and loading it again is a hit."""
    latin = tmp_path / os.fsdecode(b"caf\xe9")
    src = latin / "my_kernel.cpp"
    latin.mkdir()
    src.write_text(VECTOR_ADD_CPP)
    previous = bekc.get_cache_dir()
    bekc.set_cache_dir(str(latin / "cache"))
    try:
        prefix = unique_prefix("latin")
        mod = bekc.load_cpp_file(src, target_prefix=prefix)
        a, b = rand(16), rand(16)
        np.testing.assert_allclose(mod.vector_add(a, b), a + b, rtol=1e-6)
        assert mod.manifest_path.startswith(str(latin / "cache"))
        assert mod.manifest["targets"][0]["source"].startswith(f"{src}:")
        again = bekc.load_cpp_file(src, target_prefix=prefix, replace=True)
        assert again.manifest_path == mod.manifest_path
    finally:
        bekc.set_cache_dir(previous)


# --------------------------------------------------------------------------- loader behaviour
def test_idempotent_reload_is_fast():
    name = unique_prefix("reload")
    m1 = bekc.load_cpp_inline(name, VECTOR_ADD_CPP)
    t0 = time.perf_counter()
    m2 = bekc.load_cpp_inline(name, VECTOR_ADD_CPP)
    dt = time.perf_counter() - t0
    assert m2 is m1 and dt < 0.020, f"{dt * 1e3:.2f} ms"
    assert bekc.load(m1.manifest_path) is m1
    a = rand(10)
    np.testing.assert_allclose(m2.vector_add(a, a), 2 * a, rtol=1e-6)


def test_reload_after_cache_clear():
    name = unique_prefix("cleared")
    m1 = bekc.load_cpp_inline(name, VECTOR_ADD_CPP)
    bekc.clear_cache()
    assert not os.path.exists(m1.manifest_path)
    m2 = bekc.load_cpp_inline(name, VECTOR_ADD_CPP)  # rebuilt: same key, no conflict
    a = rand(10)
    np.testing.assert_allclose(m2.vector_add(a, a), 2 * a, rtol=1e-6)


def test_reload_after_cache_dir_removed():
    """Wiping the cache directory by hand: the in-process shortcut notices and bekc rebuilds."""
    import shutil
    name = unique_prefix("wiped")
    m1 = bekc.load_cpp_inline(name, VECTOR_ADD_CPP)
    shutil.rmtree(bekc.get_cache_dir())
    m2 = bekc.load_cpp_inline(name, VECTOR_ADD_CPP)
    assert m2 is m1  # same library bytes or same cache key: the registered module
    assert os.path.isdir(os.path.join(bekc.get_cache_dir(), "src"))  # bekc ran again
    assert os.path.isfile(m1.manifest_path)  # and rebuilt the entry under the same key
    a = rand(10)
    np.testing.assert_allclose(m2.vector_add(a, a), 2 * a, rtol=1e-6)


def test_conflicting_registration():
    name = unique_prefix("clash")
    m1 = bekc.load_cpp_inline(name, VECTOR_ADD_CPP)
    other = VECTOR_ADD_CPP.replace("x[i] + y[i]", "x[i] - y[i]")
    with pytest.raises(bekc.TargetConflictError) as e:
        bekc.load_cpp_inline(name, other)
    msg = str(e.value)
    assert m1.library_path in msg and "--target-prefix" in msg and f"{name}.vector_add" in msg
    m3 = bekc.load_cpp_inline(name, other, target_prefix=name + "_v2")
    a, b = rand(16), rand(16)
    np.testing.assert_allclose(m3.vector_add(a, b), a - b, rtol=1e-6)
    np.testing.assert_allclose(m1.vector_add(a, b), a + b, rtol=1e-6)


def test_auto_register_false():
    name = unique_prefix("noreg")
    mod = bekc.load_cpp_inline(name, VECTOR_ADD_CPP, auto_register=False)
    assert not mod.registered
    assert f"{name}.vector_add" not in bekc.registered_targets()
    mod.register()
    a = rand(5)
    np.testing.assert_allclose(mod.vector_add(a, a), 2 * a, rtol=1e-6)


def test_explicit_functions_without_annotation():
    src = VECTOR_ADD_CPP.replace("// @BE vector_add\n", "")
    name = unique_prefix("explicit")
    mod = bekc.load_cpp_inline(name, src, functions={"vector_add": ["arg", "arg", "ret"]})
    a, b = rand(64), rand(64)
    np.testing.assert_allclose(mod.vector_add(a, b), a + b, rtol=1e-6)


ATTRS = r"""
#include <cstdint>
#include <cstring>
#include "brainevent/common.h"

// @BE affine arg ret attr.a:float32 attr.b:float64 attr.n:int32 attr.flip:bool
void affine(const BE::Tensor x, BE::Tensor out, float a, double b, int32_t n, bool flip) {
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        float v = a * in[i] + static_cast<float>(b) + static_cast<float>(n);
        o[i] = flip ? -v : v;
    }
}

// @BE halves arg ret attr.h:float16 attr.bh:bfloat16
void halves(const BE::Tensor x, BE::Tensor out, uint16_t h, uint16_t bh) {
    float* o = out.data_ptr<float>();
    o[0] = static_cast<float>(h);   // the raw bits, as numbers
    o[1] = static_cast<float>(bh);
    uint32_t u = static_cast<uint32_t>(bh) << 16;
    std::memcpy(&o[2], &u, 4);       // the bfloat16 value itself
}

// @BE two_out arg ret ret
void two_out(const BE::Tensor x, BE::Tensor plus1, BE::Tensor times2) {
    const float* in = x.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        plus1.data_ptr<float>()[i] = in[i] + 1.0f;
        times2.data_ptr<float>()[i] = in[i] * 2.0f;
    }
}

// @BE checked arg ret
void checked(const BE::Tensor x, BE::Tensor out) {
    BE_CHECK(x.numel() < 4) << "input too long: " << x.numel();
}
"""


def test_attribute_types_through_generated_handlers():
    name = unique_prefix("attrs")
    mod = bekc.load_cpp_inline(name, ATTRS)
    x = rand(50)
    r = mod.affine(x, a=2.0, b=0.25, n=-3, flip=True)
    np.testing.assert_allclose(r, -(2.0 * x + 0.25 - 3), rtol=1e-5, atol=1e-5)
    r = jax.jit(lambda v: mod.affine(v, a=1, b=1, n=1, flip=False))(x)
    np.testing.assert_allclose(r, x + 2, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"affine.*'n'"):
        mod.affine(x, a=1, b=1, n=2.5, flip=False)
    with pytest.raises(ValueError, match=r"affine.*'n'"):
        mod.affine(x, a=1, b=1, n=2**31, flip=False)
    with pytest.raises(TypeError, match=r"affine.*'flip'"):
        mod.affine(x, a=1, b=1, n=1)
    r = np.asarray(mod.halves(rand(3), h=1.5, bh=3.0))
    assert int(r[0]) == int(np.float16(1.5).view(np.uint16)) and int(r[1]) == 0x4040
    assert r[2] == 3.0


def test_several_outputs():
    mod = bekc.load_cpp_inline(unique_prefix("multi"), ATTRS)
    x = rand(9)
    with pytest.raises(TypeError, match="2 outputs"):
        mod.two_out(x)
    s = jax.ShapeDtypeStruct(x.shape, x.dtype)
    p, t = mod.two_out(x, out=[s, s])
    np.testing.assert_allclose(p, x + 1, rtol=1e-6)
    np.testing.assert_allclose(t, x * 2, rtol=1e-6)


def test_vmap_and_grad_of_a_built_kernel():
    """jax.vmap without a vmap_method and jax.grad raise bekc's errors, naming
    the target and its annotation's file:line; a declared method batches the
    kernel, and jax.custom_vjp gives it a gradient that batches too."""
    name = unique_prefix("batching")
    mod = bekc.load_cpp_inline(name=name, cpp_sources=SCALE_CPP)
    source = mod.targets[f"{name}.scale"]["source"]
    x = rand(3, 8)
    double = lambda v: mod.scale(v, factor=2.0)  # noqa: E731
    with pytest.raises(bekc.NotBatchableError) as e:
        jax.vmap(double)(x)
    assert f"{name}.scale ({source})" in str(e.value)
    assert "docs/python.md#batching-and-gradients" in str(e.value)
    with pytest.raises(bekc.NotDifferentiableError) as e:
        jax.grad(lambda v: double(v).sum())(x)
    assert f"{name}.scale ({source})" in str(e.value) and "jax.custom_vjp" in str(e.value)

    mod.scale.vmap_method = "broadcast_all"  # elementwise
    np.testing.assert_allclose(jax.vmap(double)(x), 2 * x, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.vmap(double, in_axes=1, out_axes=1))(x), 2 * x,
                               rtol=1e-6)

    @jax.custom_vjp
    def scaled(v):
        return double(v)

    scaled.defvjp(lambda v: (double(v), None), lambda _, g: (double(g),))
    loss = lambda v: (scaled(v) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(jax.grad(loss)(x), 8 * x, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(loss)))(x), 8 * x, rtol=1e-5)


def test_kernel_check_failure_is_a_python_exception():
    mod = bekc.load_cpp_inline(unique_prefix("chk"), ATTRS)
    with pytest.raises(Exception, match="input too long: 10") as e:
        jax.block_until_ready(mod.checked(rand(10)))
    assert "checked" in str(e.value)
    jax.block_until_ready(mod.checked(rand(2)))  # the process lives on


def test_compile_error_names_the_users_file():
    bad = VECTOR_ADD_CPP.replace("o[i] = x[i] + y[i];", "o[i] = x[i] + y[i]  // missing semicolon\n")
    name = unique_prefix("broken")
    with pytest.raises(bekc.CompileError) as e:
        bekc.load_cpp_inline(name, bad)
    assert e.value.returncode == 1
    assert f"{name}.cpp" in str(e.value)


def test_bad_annotation_is_a_compile_error():
    bad = VECTOR_ADD_CPP.replace("// @BE vector_add", "// @BE vector_add arg ret bogus")
    with pytest.raises(bekc.CompileError, match="bogus"):
        bekc.load_cpp_inline(unique_prefix("badspec"), bad)


def test_build_directory(tmp_path):
    name = unique_prefix("outdir")
    mod = bekc.load_cpp_inline(name, VECTOR_ADD_CPP, build_directory=str(tmp_path / "out"))
    assert (tmp_path / "out" / "manifest.json").is_file()
    assert bekc.load(tmp_path / "out") is mod


def test_function_list_form_infers_spec():
    src = VECTOR_ADD_CPP.replace("// @BE vector_add\n", "")
    name = unique_prefix("listform")
    mod = bekc.load_cpp_inline(name, src, functions=["vector_add"])
    assert mod.targets[f"{name}.vector_add"]["arg_spec"] == ["arg", "arg", "ret"]
    a, b = rand(12), rand(12)
    np.testing.assert_allclose(mod.vector_add(a, b), a + b, rtol=1e-6)


def test_cli_build_then_load(tmp_path, bekc_bin):
    """The non-Python flow: `bekc build k.cpp` prints the manifest path; bekc.load reads it."""
    import subprocess
    src = tmp_path / "kernels.cpp"
    src.write_text(SCALE_CPP)
    prefix = unique_prefix("cli")
    out = subprocess.run([bekc_bin, "build", str(src), f"--target-prefix={prefix}",
                          f"--cache-dir={bekc.get_cache_dir()}"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    manifest = out.strip().splitlines()[-1]
    mod = bekc.load(manifest)
    assert mod.name == "kernels" and f"{prefix}.scale" in mod.targets
    x = rand(256)
    np.testing.assert_allclose(jax.jit(lambda v: mod.scale(v, factor=-1.5))(x), x * -1.5,
                               rtol=1e-6)
    assert bekc.load(os.path.dirname(manifest)) is mod
