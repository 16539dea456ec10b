"""bekc.numba_cuda_kernel, numba_cuda_callable and XLACustomKernel on a GPU.

Needs numba-cuda and libbekc_numba.so (beside $BEKC, or $BEKC_NUMBA_LIBRARY);
run through tests/gpu/run_all.sh, which sets XLA_FLAGS for command buffers.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bekc
from conftest import HERE, build, x64
from bekc._numba_cuda import _numba_cuda

try:
    cuda = _numba_cuda()
except ImportError as e:
    pytest.skip(f"numba-cuda is not installed: {e}", allow_module_level=True)


@cuda.jit
def add_kernel(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


@cuda.jit
def split_kernel(x, pos, neg):
    i = cuda.grid(1)
    if i < x.size:
        pos[i] = max(x[i], 0.0)
        neg[i] = min(x[i], 0.0)


@cuda.jit
def scale2d_kernel(a, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[i, j] * (i + 1) + j


@cuda.jit
def index3d_kernel(out):
    i, j, k = cuda.grid(3)
    if i < out.shape[0] and j < out.shape[1] and k < out.shape[2]:
        out[i, j, k] = i * 10000 + j * 100 + k


@cuda.jit
def reverse_block_kernel(x, out):
    # Dynamic shared memory: reverses each block of 128 elements.
    buf = cuda.shared.array(0, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i]
    cuda.syncthreads()
    out[i] = buf[cuda.blockDim.x - 1 - t]


@cuda.jit
def increment_kernel(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + 1


@cuda.jit
def mixed_kernel(flags, counts, values, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = values[i] * counts[i] if flags[i] else -1.0


def rand(n, seed=0, dtype=np.float32):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(n).astype(dtype))


# ------------------------------------------------------------------ numba_cuda_kernel
def test_1d_grid_block_and_launch_dims_agree():
    x, y = rand(1000, 1), rand(1000, 2)
    spec = jax.ShapeDtypeStruct((1000,), jnp.float32)
    explicit = bekc.numba_cuda_kernel(add_kernel, outs=spec, grid=4, block=256)
    auto = bekc.numba_cuda_kernel(add_kernel, outs=spec, launch_dims=1000, threads_per_block=128)
    np.testing.assert_allclose(explicit(x, y), x + y, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(auto)(x, y), x + y, rtol=1e-6)


def test_multiple_outputs_keep_the_structure_of_outs():
    x = rand(513)
    spec = jax.ShapeDtypeStruct((513,), jnp.float32)
    pos, neg = bekc.numba_cuda_kernel(split_kernel, outs=[spec, spec], launch_dims=513)(x)
    np.testing.assert_array_equal(pos, jnp.maximum(x, 0))
    np.testing.assert_array_equal(neg, jnp.minimum(x, 0))
    d = bekc.numba_cuda_kernel(split_kernel, outs={"p": spec, "n": spec}, launch_dims=513)(x)
    # Dict outputs come back in key order, the kernel receives them sorted too.
    np.testing.assert_array_equal(d["n"], jnp.maximum(x, 0))


def test_2d_launch_sees_shape_and_strides():
    a = rand(37 * 70).reshape(37, 70)
    fn = bekc.numba_cuda_kernel(scale2d_kernel, outs=jax.ShapeDtypeStruct((37, 70), jnp.float32),
                                launch_dims=(37, 70))
    i, j = np.meshgrid(np.arange(37), np.arange(70), indexing="ij")
    np.testing.assert_allclose(fn(a), np.asarray(a) * (i + 1) + j, rtol=1e-6)


def test_3d_launch():
    shape = (5, 19, 33)
    fn = bekc.numba_cuda_kernel(index3d_kernel, outs=jax.ShapeDtypeStruct(shape, jnp.int32),
                                launch_dims=shape)
    i, j, k = np.meshgrid(*map(np.arange, shape), indexing="ij")
    np.testing.assert_array_equal(jax.jit(fn)(), i * 10000 + j * 100 + k)


def test_dynamic_shared_memory():
    x = jnp.arange(512, dtype=jnp.float32)
    fn = bekc.numba_cuda_kernel(reverse_block_kernel, outs=jax.ShapeDtypeStruct((512,), jnp.float32),
                                grid=4, block=128, shared_mem=128 * 4)
    want = np.asarray(x).reshape(4, 128)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(fn(x), want)


def test_mixed_dtypes_and_one_compile_per_signature():
    n = 300
    fn = bekc.numba_cuda_kernel(mixed_kernel, outs=jax.ShapeDtypeStruct((n,), jnp.float64),
                                launch_dims=n)
    flags = jnp.asarray(np.arange(n) % 3 == 0)
    counts = jnp.arange(n, dtype=jnp.int32)
    with x64():
        values = jnp.linspace(0, 1, n, dtype=jnp.float64)
        out = fn(flags, counts, values)
        want = np.where(np.asarray(flags), np.asarray(values) * np.arange(n), -1.0)
        np.testing.assert_allclose(out, want, rtol=1e-12)
    # Another shape, same dtypes and ranks: same entry; the handler reads the shape.
    assert len(fn._ids) == 1


def test_shapes_change_without_recompiling():
    spec_fn = lambda n: bekc.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((n,), jnp.float32),
                                               launch_dims=n)
    for n in (7, 1024, 4097):
        x, y = rand(n, n), rand(n, n + 1)
        np.testing.assert_allclose(spec_fn(n)(x, y), x + y, rtol=1e-6)


def test_input_output_aliases():
    x = rand(256)
    fn = bekc.numba_cuda_kernel(increment_kernel, outs=jax.ShapeDtypeStruct((256,), jnp.float32),
                                launch_dims=256, input_output_aliases={0: 0})
    np.testing.assert_allclose(jax.jit(fn)(x), x + 1, rtol=1e-6)


def test_vmap_method_is_passed_to_ffi_call():
    xs, ys = rand(4 * 64).reshape(4, 64), rand(4 * 64, 9).reshape(4, 64)
    fn = bekc.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((64,), jnp.float32),
                                launch_dims=64, vmap_method="sequential")
    np.testing.assert_allclose(jax.vmap(fn)(xs, ys), xs + ys, rtol=1e-6)


def test_errors_for_bad_configurations():
    spec = jax.ShapeDtypeStruct((8,), jnp.float32)
    with pytest.raises(bekc.NotAKernelError, match="@numba.cuda.jit"):
        bekc.numba_cuda_kernel(lambda x, out: None, outs=spec, launch_dims=8)
    with pytest.raises(AssertionError):  # brainevent's exception type still catches it
        bekc.numba_cuda_kernel(np.add, outs=spec, launch_dims=8)
    with pytest.raises(ValueError, match="not both"):
        bekc.numba_cuda_kernel(add_kernel, outs=spec, grid=1, block=8, launch_dims=8)
    with pytest.raises(ValueError, match="launch configuration is needed"):
        bekc.numba_cuda_kernel(add_kernel, outs=spec)
    with pytest.raises(ValueError, match="block is missing"):
        bekc.numba_cuda_kernel(add_kernel, outs=spec, grid=1)


def test_wrong_dtype_for_numba_is_refused_before_launch():
    with pytest.raises(TypeError, match="output 0 has dtype bfloat16"):  # when wrapping
        bekc.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((8,), jnp.bfloat16),
                               launch_dims=8)


def test_debug_kernels_are_refused_with_the_way_out():
    @cuda.jit(debug=True, opt=False)
    def dbg(x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i]

    fn = bekc.numba_cuda_kernel(dbg, outs=jax.ShapeDtypeStruct((8,), jnp.float32), launch_dims=8)
    with pytest.raises(bekc.BekcError, match="numba_cuda_callable"):
        fn(jnp.ones(8, jnp.float32))


def test_fori_loop_of_1000_launches_is_captured_in_a_command_buffer():
    # XLA_FLAGS (run_all.sh) turn on command buffers for custom calls. A
    # captured launch is replayed from the CUDA graph without calling the
    # handler, so the handler's own count shows whether XLA captured it.
    n = 10_000
    step = bekc.numba_cuda_kernel(increment_kernel, outs=jax.ShapeDtypeStruct((n,), jnp.float32),
                                  launch_dims=n)
    loop = jax.jit(lambda x: jax.lax.fori_loop(0, 1000, lambda i, v: step(v), x))
    x = rand(n)
    np.testing.assert_allclose(loop(x), x + 1000, rtol=1e-5)
    first = step.launch_stats()
    assert first["captured"] >= 1, first
    np.testing.assert_allclose(loop(x + 1), x + 1001, rtol=1e-5)
    second = step.launch_stats()
    assert second["launches"] - first["launches"] < 10, (first, second)


def test_callable_is_not_captured():
    calls = []

    def fn(x, out, stream):
        calls.append(1)
        increment_kernel[(x.size + 127) // 128, 128, stream](x, out)

    step = bekc.numba_cuda_callable(fn, outs=jax.ShapeDtypeStruct((64,), jnp.float32))
    loop = jax.jit(lambda x: jax.lax.fori_loop(0, 5, lambda i, v: step(v), x))
    x = rand(64)
    np.testing.assert_allclose(loop(x), x + 5, rtol=1e-6)
    np.testing.assert_allclose(loop(x), x + 5, rtol=1e-6)
    assert len(calls) == 10  # Python ran on every step of both runs: nothing was replayed


# ------------------------------------------------------------------ numba_cuda_callable
def test_callable_gets_views_of_xla_buffers_and_xlas_stream():
    seen = {}

    def fn(x, y, out, stream):
        seen["shapes"] = (x.shape, y.shape, out.shape)
        seen["dtypes"] = (x.dtype, out.dtype)
        seen["stream"] = stream
        temp = cuda.device_array(x.shape[0], dtype=np.float32)
        add_kernel[(x.size + 255) // 256, 256, stream](x, y, temp)
        add_kernel[(x.size + 255) // 256, 256, stream](temp, y, out)

    x, y = rand(1000, 3), rand(1000, 4)
    call = bekc.numba_cuda_callable(fn, outs=jax.ShapeDtypeStruct((1000,), jnp.float32))
    np.testing.assert_allclose(jax.jit(call)(x, y), x + 2 * y, rtol=1e-5)
    assert seen["shapes"] == ((1000,), (1000,), (1000,))
    assert seen["dtypes"] == (np.float32, np.float32)
    assert seen["stream"].handle is not None


def test_callable_exception_becomes_a_jax_error_and_process_lives():
    def fn(x, out, stream):
        raise RuntimeError("kernel pipeline broke at stage 2")

    call = bekc.numba_cuda_callable(fn, outs=jax.ShapeDtypeStruct((4,), jnp.float32))
    with pytest.raises(Exception, match="kernel pipeline broke at stage 2"):
        jax.block_until_ready(call(jnp.ones(4, jnp.float32)))
    ok = bekc.numba_cuda_kernel(increment_kernel, outs=jax.ShapeDtypeStruct((4,), jnp.float32),
                                launch_dims=4)
    np.testing.assert_array_equal(ok(jnp.ones(4, jnp.float32)), 2 * np.ones(4))


# ------------------------------------------------------------------ XLACustomKernel
@pytest.fixture(scope="module")
def leaky_modules(cache_dir):
    src = HERE / "kernels" / "leaky_relu"
    cpu = bekc.load(build(src / "leaky_relu.cpp", "--target-prefix", "leaky_cpu",
                          cache_dir=cache_dir)["manifest"])
    gpu = bekc.load(build(src / "leaky_relu.cu", "--arch", "native", "--target-prefix",
                          "leaky_gpu", cache_dir=cache_dir)["manifest"])
    return cpu, gpu


def leaky_numba_generator(outs, alpha=0.01, **kwargs):
    n = outs[0].shape[0]
    alpha = float(alpha)

    @cuda.jit
    def kern(x, out):
        i = cuda.grid(1)
        if i < out.size:
            v = x[i]
            out[i] = v if v > 0.0 else alpha * v

    call = bekc.numba_cuda_kernel(kern, outs=outs[0], launch_dims=n)
    return lambda x: call(x)


def test_xla_custom_kernel_picks_the_platform_implementation(leaky_modules):
    cpu_mod, gpu_mod = leaky_modules
    op = bekc.XLACustomKernel("test_numba.leaky_relu")
    op.def_numba_cuda_kernel(leaky_numba_generator)
    op.def_cuda_kernel(gpu_mod.leaky_relu)
    op.def_cpu_kernel(cpu_mod.leaky_relu)
    assert op.defaults == {"gpu": "numba_cuda", "cpu": "bekc"}

    f = jax.jit(lambda x, alpha: op(x, outs=[jax.ShapeDtypeStruct(x.shape, x.dtype)],
                                    alpha=alpha)[0], static_argnames="alpha")
    x = jnp.linspace(-3, 3, 301, dtype=jnp.float32)
    want = np.where(np.asarray(x) > 0, np.asarray(x), 0.2 * np.asarray(x))
    np.testing.assert_allclose(f(x, alpha=0.2), want, rtol=1e-6)            # numba on GPU
    assert "bekc.numba_cuda_kernel" in f.lower(x, alpha=0.2).as_text()
    cpu = jax.devices("cpu")[0]
    x_cpu = jax.device_put(x, cpu)
    np.testing.assert_allclose(f(x_cpu, alpha=0.2), want, rtol=1e-6)        # .cpp on CPU
    assert "leaky_cpu.leaky_relu" in f.lower(x_cpu, alpha=0.2).as_text()
    op.set_default("gpu", "bekc")
    g = jax.jit(lambda x: op(x, outs=[jax.ShapeDtypeStruct(x.shape, x.dtype)], alpha=0.2)[0])
    np.testing.assert_allclose(g(x), want, rtol=1e-6)                        # bekc .cu on GPU
    assert "leaky_gpu.leaky_relu" in g.lower(x).as_text()
    # A traced keyword cannot reach a generator: clear error, not a crash.
    h = jax.jit(lambda x, alpha: op(x, outs=[jax.ShapeDtypeStruct(x.shape, x.dtype)], alpha=alpha))
    with pytest.raises(TypeError, match="static_argnames"):
        h(x, 0.2)


# ------------------------------------------------------------------ brainevent 0.2.1's behaviour
@cuda.jit
def reverse_kernel(x, out):
    i = cuda.grid(1)
    n = out.size
    if i < n:
        out[i] = x[n - 1 - i]


@pytest.mark.parametrize("vmap_method", ["expand_dims", "broadcast_all"])
def test_vmap_launches_once_per_slice(vmap_method):
    # A kernel of its own: a shared entry would give both parameters the same
    # executable, replayed from its CUDA graph without calling the handler.
    @cuda.jit
    def add_rows(x, y, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i] + y[i]

    n, batch = 16, 8
    add = bekc.numba_cuda_kernel(add_rows, outs=jax.ShapeDtypeStruct((n,), jnp.float32),
                                 launch_dims=n, vmap_method=vmap_method)
    xs, ys = rand(batch * n).reshape(batch, n), rand(batch * n, 1).reshape(batch, n)
    np.testing.assert_allclose(jax.jit(jax.vmap(add))(xs, ys), xs + ys, rtol=1e-6)
    assert add.launch_stats()["launches"] == batch  # one launch per slice
    # Rows that read each other stay within their slice.
    rev = bekc.numba_cuda_kernel(reverse_kernel, outs=jax.ShapeDtypeStruct((4,), jnp.float32),
                                 launch_dims=4, vmap_method=vmap_method)
    x = jnp.arange(16, dtype=jnp.float32).reshape(4, 4)
    np.testing.assert_array_equal(jax.vmap(rev)(x), np.asarray(x)[:, ::-1])
    # An unmapped input arrives with a leading axis of 1 (expand_dims) or the batch.
    y = rand(n, 2)
    np.testing.assert_allclose(jax.vmap(add, in_axes=(0, None))(xs, y), xs + y[None], rtol=1e-6)
    # A batch of one still has its axis.
    one = jax.vmap(add)(xs[:1], ys[:1])
    assert one.shape == (1, n)
    np.testing.assert_allclose(one, xs[:1] + ys[:1], rtol=1e-6)


def test_nested_vmap_is_refused_and_sequential_outer_levels_work():
    n = 8
    add = bekc.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((n,), jnp.float32),
                                 launch_dims=n, vmap_method="expand_dims")
    x = jnp.arange(2 * 3 * n, dtype=jnp.float32).reshape(2, 3, n)
    with pytest.raises(Exception, match="only one level of vmap"):
        jax.block_until_ready(jax.vmap(jax.vmap(add))(x, x))
    inner = jax.vmap(add)
    outer = jax.jit(lambda a, b: jax.lax.map(lambda ab: inner(*ab), (a, b)))
    np.testing.assert_allclose(outer(x, x), 2 * np.asarray(x), rtol=1e-6)


def test_explicit_grid_with_sequential_vmap():
    add = bekc.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((64,), jnp.float32),
                                 grid=1, block=64, vmap_method="sequential")
    xs = rand(3 * 64).reshape(3, 64)
    np.testing.assert_allclose(jax.vmap(add)(xs, xs), 2 * xs, rtol=1e-6)


def test_launch_dims_of_zero_zero_fill_without_launching():
    n = 128
    fn = bekc.numba_cuda_kernel(increment_kernel, outs=jax.ShapeDtypeStruct((n,), jnp.float32),
                                launch_dims=0, input_output_aliases={0: 0})
    x = jnp.arange(1, n + 1, dtype=jnp.float32)
    np.testing.assert_array_equal(jax.jit(fn)(x), np.zeros(n, np.float32))
    assert fn.launch_stats() == {"launches": 0, "captured": 0}
    empty = bekc.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((0,), jnp.float32),
                                   launch_dims=0)
    assert jax.jit(empty)(jnp.zeros(0), jnp.zeros(0)).shape == (0,)


def test_the_kernel_runs_on_xlas_stream():
    # brainevent's test watches its Python handler ask XLA for the stream;
    # bekc's handler is compiled, so compare the stream of its launch with the
    # one XLA hands a callable in the same computation.
    n = 256
    add = bekc.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((n,), jnp.float32),
                                 launch_dims=n)
    seen = []

    def record(x, out, stream):
        seen.append(int(stream.handle.value if hasattr(stream.handle, "value")
                        else stream.handle))
        increment_kernel[1, n, stream](x, out)

    after = bekc.numba_cuda_callable(record, outs=jax.ShapeDtypeStruct((n,), jnp.float32))
    x = rand(n)
    np.testing.assert_allclose(jax.jit(lambda a: after(add(a, a)))(x), 2 * x + 1, rtol=1e-6)
    assert seen and seen[0] != 0
    assert add.launch_streams() == [seen[0]]


def test_wrapping_a_kernel_again_reuses_its_entry():
    # brainevent counts its registered FFI targets; bekc's are library entries.
    from bekc._numba_cuda import _LAUNCH_ENTRIES

    @cuda.jit
    def copy(x, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = x[i]

    before = len(_LAUNCH_ENTRIES)
    wrappers = []
    for _ in range(5):
        fn = bekc.numba_cuda_kernel(copy, outs=jax.ShapeDtypeStruct((8,), jnp.float32),
                                    launch_dims=8)
        np.testing.assert_array_equal(fn(jnp.arange(8, dtype=jnp.float32)), np.arange(8))
        np.testing.assert_array_equal(fn(jnp.arange(16, dtype=jnp.float32)), np.arange(8))
        wrappers.append(fn)
    assert len(_LAUNCH_ENTRIES) - before == 1
    # One entry, so one set of counts (replays from CUDA graphs call no handler).
    stats = [w.launch_stats() for w in wrappers]
    assert stats[0]["launches"] >= 1 and all(s == stats[0] for s in stats)


def test_0d_inputs_and_bfloat16_are_refused_with_brainevents_types():
    with pytest.raises(ValueError, match="bfloat16"):
        bekc.numba_cuda_kernel(add_kernel, outs=jax.ShapeDtypeStruct((8,), jnp.bfloat16),
                               launch_dims=8)
    fn = bekc.numba_cuda_kernel(increment_kernel, outs=jax.ShapeDtypeStruct((1,), jnp.float32),
                                launch_dims=1)
    with pytest.raises(ValueError, match="0-d array"):
        fn(jnp.asarray(3.0))
    with pytest.raises(ValueError, match="input 0 has dtype bfloat16"):
        fn(jnp.ones(1, jnp.bfloat16))
