"""Run-time checks of a call against the kernel, end to end through JAX on the
``cpu`` platform: data_ptr<T>() refuses a dtype of another width, and the
handler checks the arguments' count, dtypes and sizes before the kernel runs.

Each case runs in its own Python process, because before these checks some of
them corrupted the heap and aborted the process (``malloc(): invalid size``):
the test asserts that the child lives to its last line and what its exception
says. The kernels are KERNELS below and examples/quickstart/cpu_kernels.cpp,
built once per module with the real ``bekc`` binary (tests/support/binaries.py).

docs/cpp_api.md, "What a call is checked for", lists every case and where it
is checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid

import pytest

pytest.importorskip("jax")

from support.binaries import bekc_binary  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
QUICKSTART = os.path.join(REPO, "examples", "quickstart", "cpu_kernels.cpp")

# Kernels that do not check dtypes, as many do: data_ptr<T>() is what stops them.
KERNELS = r"""
#include <cstddef>
#include <cstring>

#include "brainevent/common.h"

// examples/quickstart's scale before it checked dtypes and sizes.
#define DEFINE_SCALE(SUFFIX, T)                                        \
    void scale##SUFFIX(const BE::Tensor x, BE::Tensor out, T factor) { \
        for (int64_t i = 0; i < x.numel(); ++i)                        \
            out.data_ptr<T>()[i] = x.data_ptr<T>()[i] * factor;        \
    }

// @BE scale_f32
DEFINE_SCALE(_f32, float)
// @BE scale_f64
DEFINE_SCALE(_f64, double)

// The sum of a float32 input, into a float32 scalar.
// @BE sum_f32
void sum_f32(const BE::Tensor x, BE::Tensor out) {
    const float* in = x.data_ptr<float>();
    double sum = 0;
    for (int64_t i = 0; i < x.numel(); ++i) sum += in[i];
    *out.data_ptr<float>() = static_cast<float>(sum);
}

// float16 (or bfloat16) bits, viewed as uint16_t: the same width.
// @BE half_bits
void half_bits(const BE::Tensor x, BE::Tensor out) {
    const uint16_t* in = x.data_ptr<const uint16_t>();
    uint16_t* o = out.data_ptr<uint16_t>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i];
}

// How many of a bool input are true, reading bool as uint8_t.
// @BE count_true
void count_true(const BE::Tensor x, BE::Tensor out) {
    const uint8_t* in = x.data_ptr<uint8_t>();
    int32_t n = 0;
    for (int64_t i = 0; i < x.numel(); ++i) n += in[i] != 0;
    *out.data_ptr<int32_t>() = n;
}

// The bytes of an input of any dtype, through every byte view.
// @BE copy_bytes
void copy_bytes(const BE::Tensor x, BE::Tensor out) {
    BE_CHECK(out.nbytes() == x.nbytes())
        << "out has " << out.nbytes() << " bytes, x " << x.nbytes();
    const void* v = x.data_ptr<const void>();
    const char* c = x.data_ptr<const char>();
    const std::byte* b = x.data_ptr<std::byte>();
    BE_CHECK(v == c && static_cast<const void*>(b) == v) << "byte views differ";
    unsigned char* o = out.data_ptr<unsigned char>();
    if (x.nbytes() > 0) std::memcpy(o, b, x.nbytes());
}

// Element i of the output is element i of x in memory order (float32).
// @BE memory_order
void memory_order(const BE::Tensor x, BE::Tensor out) {
    BE_CHECK(out.numel() == x.numel()) << "sizes differ";
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i];
}
"""

PRELUDE = """
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import bekc

kern = bekc.load({kernels!r})
quick = bekc.load({quickstart!r})
sds = jax.ShapeDtypeStruct


def error_of(f):
    try:
        jax.block_until_ready(f())
    except Exception as e:
        return f"{{type(e).__name__}}: {{e}}"
    return "no error"


def show(f):
    print("ERROR:", error_of(f), flush=True)
"""

# Every child ends with a correct call after its failures: the process and XLA still work.
EPILOGUE = """
x = jnp.arange(4, dtype=jnp.float32)
np.testing.assert_allclose(kern.scale_f32(x, factor=2.0), np.arange(4) * 2.0)
print("ALIVE", flush=True)
"""

HINT = "; check the dtype first, or dispatch on it (BE_DISPATCH_*)"


def build(source: str, cache_dir: str, prefix: str) -> str:
    proc = subprocess.run(
        [str(bekc_binary()), "build", source, "--cache-dir", cache_dir, "--target-prefix", prefix,
         "--json", "-q"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)["manifest"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("runtime-checks")
    source = work / "runtime_checks.cpp"
    source.write_text(KERNELS)
    cache = str(work / "cache")
    tag = uuid.uuid4().hex[:8]
    return {"source": str(source),
            "kernels": build(str(source), cache, f"rc_{tag}"),
            "quickstart": build(QUICKSTART, cache, f"qs_{tag}")}


def run_case(built, body: str) -> list:
    """Runs PRELUDE + body + EPILOGUE in a child; returns the lines it printed after ERROR:."""
    script = (PRELUDE.format(kernels=built["kernels"], quickstart=built["quickstart"])
              + textwrap.dedent(body) + EPILOGUE)
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python"),
                                           os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the child died (status {proc.returncode}):\n{out}"
    assert "ALIVE" in proc.stdout, out
    return [line[len("ERROR: "):] for line in proc.stdout.splitlines()
            if line.startswith("ERROR: ")]


def in_text(error: str, text: str) -> bool:
    """`text` ends the message, or is followed only by what newer jaxlibs add
    (" [executable_name='...']")."""
    return error.endswith(text) or (text + " [") in error


def line_in(path: str, needle: str) -> int:
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if needle in line:
                return n
    raise AssertionError(f"{needle!r} not in {path}")


# --------------------------------------------------------------------------- data_ptr<T>()
def test_quickstart_scale_f64_on_float32_is_an_error_not_a_heap_corruption(built):
    # The case: out defaults to x's shape and dtype, so the whole call is float32.
    (err,) = run_case(built, """
        show(lambda: kern.scale_f64(jnp.ones(100_000, jnp.float32), factor=2.0))
    """)
    line = line_in(built["source"], "DEFINE_SCALE(_f64, double)")
    assert err.startswith("JaxRuntimeError: INTERNAL: rc_"), err
    assert f".scale_f64: {built['source']}:{line}: " in err, err
    assert in_text(err, "data_ptr<double>() on argument 0 (float32): double has 8 bytes, "
                        "float32 elements have 4" + HINT), err


def test_data_ptr_float_on_int64_argument_and_float64_result(built):
    errs = run_case(built, """
        show(lambda: kern.sum_f32(jnp.arange(8, dtype=jnp.int64), out=sds((), jnp.float32)))
        show(lambda: kern.sum_f32(jnp.ones(8, jnp.float32), out=sds((), jnp.float64)))
        # int8 is narrower: reading 4-byte floats from it would run past the buffer.
        show(lambda: kern.sum_f32(jnp.ones(3, jnp.int8), out=sds((), jnp.float32)))
    """)
    line = line_in(built["source"], "const float* in = x.data_ptr<float>()")
    out_line = line_in(built["source"], "*out.data_ptr<float>() =")
    assert in_text(errs[0], f".sum_f32: {built['source']}:{line}: data_ptr<float>() on argument "
                            "0 (int64): float has 4 bytes, int64 elements have 8" + HINT), errs[0]
    assert in_text(errs[1], f".sum_f32: {built['source']}:{out_line}: data_ptr<float>() on "
                            "result 0 (float64): float has 4 bytes, float64 elements have 8"
                            + HINT), errs[1]
    assert ("data_ptr<float>() on argument 0 (int8): float has 4 bytes, int8 elements have 1"
            in errs[2]), errs[2]


def test_same_width_reinterpretations_are_allowed(built):
    errs = run_case(built, """
        import ml_dtypes
        h = jnp.asarray(np.array([1.0, -2.5, 65504.0], np.float16))
        bits = kern.half_bits(h, out=sds(h.shape, jnp.uint16))
        assert (np.asarray(bits) == np.asarray(h).view(np.uint16)).all()
        b = jnp.asarray(np.array([0.5, -3.0], ml_dtypes.bfloat16))
        bbits = kern.half_bits(b, out=sds(b.shape, jnp.uint16))
        assert (np.asarray(bbits) == np.asarray(b).view(np.uint16)).all()
        # And the other way: uint16 bits into a float16 output.
        back = kern.half_bits(bits, out=sds(h.shape, jnp.float16))
        assert (np.asarray(back) == np.asarray(h)).all()
        mask = jnp.asarray([True, False, True, True])
        assert int(kern.count_true(mask, out=sds((), jnp.int32))) == 3
        # uint32 read as float: the same width, allowed (the values are the kernel's business).
        assert float(kern.sum_f32(jnp.asarray([1, 2], jnp.uint32), out=sds((), jnp.float32))) >= 0
        # A different width is still refused.
        show(lambda: kern.half_bits(jnp.ones(3, jnp.float32)))
    """)
    assert in_text(errs[0], "data_ptr<uint16_t>() on argument 0 (float32): uint16_t has 2 "
                            "bytes, float32 elements have 4" + HINT), errs


def test_byte_views_read_any_dtype(built):
    run_case(built, """
        for x in [jnp.arange(5, dtype=jnp.float64), jnp.arange(6, dtype=jnp.int16),
                  jnp.asarray([1 + 2j, 3 - 4j], jnp.complex128), jnp.asarray([True, False])]:
            raw = kern.copy_bytes(x, out=sds((x.nbytes,), jnp.uint8))
            assert np.asarray(raw).tobytes() == np.asarray(x).tobytes(), x.dtype
    """)


# --------------------------------------------------------------------------- sizes and shapes
def test_zero_size_arrays_reach_the_kernel_with_numel_0(built):
    errs = run_case(built, """
        # has_side_effect keeps XLA from dropping a call whose every array is empty.
        for shape in [(0,), (3, 0), (0, 4, 2)]:
            x = jnp.zeros(shape, jnp.float32)
            out = kern.copy_bytes.call([x], out=sds((0,), jnp.uint8), has_side_effect=True)
            assert out.shape == (0,)
            y = quick.vector_add.call([x, x], has_side_effect=True)
            assert y.shape == shape
        # An empty input with a non-empty output: the kernel says what is wrong.
        show(lambda: quick.vector_add(jnp.zeros(0, jnp.float32), jnp.zeros(0, jnp.float32),
                                      out=sds((4,), jnp.float32)))
        # data_ptr<T>() of the wrong width is an error whatever the size, empty included.
        show(lambda: kern.sum_f32(jnp.zeros((2, 0), jnp.int64), out=sds((), jnp.float32)))
        assert float(kern.sum_f32(jnp.zeros((2, 0), jnp.float32), out=sds((), jnp.float32))) == 0
    """)
    assert "sizes differ: 0 + 0 -> 4" in errs[0], errs
    assert "data_ptr<float>() on argument 0 (int64)" in errs[1], errs


def test_quickstart_checks_the_output_shape_it_cannot_know(built):
    # The handler cannot know which output shape a kernel needs; the example checks it, where
    # its old loop wrote x.numel() elements into the smaller output.
    errs = run_case(built, """
        x = jnp.ones(8, jnp.float32)
        show(lambda: quick.scale_f32(x, out=sds((2,), jnp.float32), factor=2.0))
        show(lambda: quick.scale_f64(x, factor=2.0))
        show(lambda: quick.vector_add(x, jnp.ones(3, jnp.float32)))
        show(lambda: quick.lif_step(x, x, out=[sds((8,), jnp.float32), sds((8,), jnp.float32)],
                                    tau=1.0, v_th=1.0, v_reset=0.0))
        np.testing.assert_allclose(quick.scale_f64(x.astype(jnp.float64), factor=2.0), 2.0)
    """)
    f32 = line_in(QUICKSTART, "DEFINE_SCALE(_f32, float")
    f64 = line_in(QUICKSTART, "DEFINE_SCALE(_f64, double")
    assert in_text(errs[0], f"{QUICKSTART}:{f32}: BE_CHECK(out.numel() == x.numel()) failed: "
                            "out has 2 elements, x 8"), errs[0]
    assert in_text(errs[1], f"{QUICKSTART}:{f64}: BE_CHECK(x.dtype() == BE::DType::Float64 && "
                            "out.dtype() == BE::DType::Float64) failed: scale_f64 takes float64, "
                            "got float32 -> float32"), errs[1]
    assert in_text(errs[2], "sizes differ: 8 + 3 -> 8"), errs[2]
    assert in_text(errs[3], "spikes must be bool, got float32"), errs[3]


def test_default_layout_is_row_major(built):
    # XLA hands a custom call row-major buffers unless ffi_call is given other layouts:
    # a transposed array arrives as its own row-major copy.
    run_case(built, """
        x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
        for arr in [x, x.T, x[:, ::-1], x.T.reshape(2, 3)]:
            got = jax.jit(lambda a: kern.memory_order(a))(arr)
            assert (np.asarray(got) == np.asarray(arr)).all(), (arr, got)
    """)


def test_a_layout_other_than_row_major_is_refused_before_the_call(built):
    # The handler cannot see a layout: the loader refuses one BE::Tensor would misread.
    errors = run_case(built, """
        x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
        f = kern["memory_order"]
        show(lambda: f.call([x], input_layouts=[(1, 0)]))
        show(lambda: f.call([x], output_layouts=[(1, 0)]))
        got = f.call([x], input_layouts=[(0, 1)])
        assert (np.asarray(got) == np.asarray(x)).all()
    """)
    assert len(errors) == 2, errors
    assert "input_layouts[0] = (1, 0) is not row-major" in errors[0], errors
    assert "output_layouts[0] = (1, 0) is not row-major" in errors[1], errors


# ------------------------------------------------------------------ the handler's own checks
def test_wrong_attribute_count_name_and_dtype(built):
    errs = run_case(built, """
        x = jnp.ones(4, jnp.float32)
        t = kern.scale_f32.target
        call = jax.ffi.ffi_call(t, sds(x.shape, x.dtype))
        show(lambda: call(x))
        show(lambda: call(x, factor=np.float32(1), extra=np.float32(2)))
        show(lambda: call(x, fator=np.float32(1)))
        show(lambda: call(x, factor=np.int32(1)))
        # Through bekc.load the same mistakes are Python errors before any call.
        show(lambda: kern.scale_f32(x))
        show(lambda: kern.scale_f32(x, factor=1.0, extra=2.0))
    """)
    assert in_text(errs[0], ".scale_f32: expected 1 attributes, got 0"), errs[0]
    assert in_text(errs[1], ".scale_f32: expected 1 attributes, got 2"), errs[1]
    assert "unexpected attribute 'fator' (expected 'factor'" in errs[2], errs[2]
    assert "attribute 'factor' must be float32, got int32" in errs[3], errs[3]
    assert errs[4].startswith("TypeError: scale_f32() missing attribute 'factor' (float32)"), \
        errs[4]
    assert errs[5].startswith("TypeError: scale_f32() got an unexpected attribute 'extra'"), errs[5]


def test_wrong_array_count_and_rank_above_8(built):
    errs = run_case(built, """
        x = jnp.ones(4, jnp.float32)
        t = kern.scale_f32.target
        show(lambda: jax.ffi.ffi_call(t, sds(x.shape, x.dtype))(x, x, factor=np.float32(1)))
        show(lambda: jax.ffi.ffi_call(t, [sds(x.shape, x.dtype)] * 2)(x, factor=np.float32(1)))
        y = jnp.ones((1,) * 9, jnp.float32)
        show(lambda: kern.scale_f32(y, factor=1.0))
        show(lambda: kern.scale_f32(x, x, factor=1.0))
    """)
    assert in_text(errs[0], ".scale_f32: expected 1 arguments, got 2"), errs[0]
    assert in_text(errs[1], ".scale_f32: expected 1 results, got 2"), errs[1]
    assert in_text(errs[2], ".scale_f32: argument 0 has rank 9; BE::Tensor supports 0 to 8 "
                            "dimensions"), errs[2]
    assert errs[3].startswith("TypeError: scale_f32() takes 1 input array"), errs[3]
