"""``bekc.numba_cuda_kernel`` and friends, without a GPU and without Numba.

What runs on a CPU-only machine:

* ``resolve_launch``: the (grid, block) a launch configuration gives, and
  every configuration it refuses;
* ``find_numba_library``: where ``libbekc_numba.so`` is looked for;
* the ImportError a user without Numba gets (Numba is hidden through
  ``sys.modules``, so these tests run whether or not it is installed);
* ``libbekc_numba.so`` itself through ctypes (``_Native``): ABI check,
  registration of its two FFI targets, ``add_launch``/``launch_stats``/
  ``add_callable``, and the validation its handlers do before touching CUDA
  (the handlers are registered a second time for the ``cpu`` platform under
  test-only names so XLA's CPU client can call them);
* argument checks of ``numba_cuda_callable``.

The library is the ``numba_library`` fixture (tests/support/binaries.py:
``$BEKC_NUMBA_LIBRARY``, the one beside the bekc binary, or
``build/libbekc_numba.so``); tests needing it skip when none exists
(``cmake --build build --target bekc_numba``).
"""

from __future__ import annotations

import ctypes
import os
import re
import stat
import sys
import uuid

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import bekc  # noqa: E402
from bekc import _numba_cuda, _numba_native  # noqa: E402
from bekc._numba_cuda import resolve_launch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LIB_NAME = "libbekc_numba.so"

F32 = 11  # XLA element type numbers (xla_ffi_abi.h), as _numba_cuda._XLA_DTYPES has them
S32 = 4


# =========================================================================== resolve_launch
@pytest.mark.parametrize("grid, block, want", [
    (4, 128, ((4, 1, 1), (128, 1, 1))),
    ((4,), (128,), ((4, 1, 1), (128, 1, 1))),
    ((2, 3), (16, 16), ((2, 3, 1), (16, 16, 1))),
    ((2, 3, 4), (8, 8, 4), ((2, 3, 4), (8, 8, 4))),
    ([5, 6], [32, 2], ((5, 6, 1), (32, 2, 1))),
    (np.int64(7), (np.int32(64),), ((7, 1, 1), (64, 1, 1))),
])
def test_grid_and_block_are_padded_to_three_dimensions(grid, block, want):
    got = resolve_launch(grid=grid, block=block)
    assert got == want
    # Plain ints: they go to ctypes uint32 arrays.
    assert all(type(v) is int for dims in got for v in dims)


@pytest.mark.parametrize("launch_dims, tpb, want", [
    # 1-D: block = threads_per_block, grid = ceil(n / block)
    (1000, 256, ((4, 1, 1), (256, 1, 1))),
    ((1000,), 128, ((8, 1, 1), (128, 1, 1))),
    (256, 256, ((1, 1, 1), (256, 1, 1))),
    (1, 256, ((1, 1, 1), (256, 1, 1))),
    (257, 256, ((2, 1, 1), (256, 1, 1))),
    # 2-D: block = (s, s) with s = isqrt(threads_per_block)
    ((100, 33), 256, ((7, 3, 1), (16, 16, 1))),
    ((100, 33), 64, ((13, 5, 1), (8, 8, 1))),
    ((100, 33), 1000, ((4, 2, 1), (31, 31, 1))),
    ((5, 5), 1, ((5, 5, 1), (1, 1, 1))),
    # 3-D: block = (8, 8, threads_per_block // 64)
    ((10, 20, 30), 256, ((2, 3, 8), (8, 8, 4))),
    ((10, 20, 30), 512, ((2, 3, 4), (8, 8, 8))),
    ((10, 20, 30), 1024, ((2, 3, 2), (8, 8, 16))),
])
def test_launch_dims_choose_block_and_grid(launch_dims, tpb, want):
    grid, block = resolve_launch(launch_dims=launch_dims, threads_per_block=tpb)
    assert (grid, block) == want
    # Every requested thread is covered.
    dims = launch_dims if isinstance(launch_dims, tuple) else (launch_dims,)
    for n, g, b in zip(dims, grid, block):
        assert g * b >= n


def test_launch_dims_default_is_256_threads_per_block():
    assert resolve_launch(launch_dims=1 << 20) == ((4096, 1, 1), (256, 1, 1))
    assert resolve_launch(launch_dims=(64, 64))[1] == (16, 16, 1)
    assert resolve_launch(launch_dims=(8, 8, 8))[1] == (8, 8, 4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(grid=1, block=32, launch_dims=32), "either grid and block, or launch_dims, not both"),
    (dict(grid=1, launch_dims=32), "not both"),
    (dict(block=32, launch_dims=32), "not both"),
    (dict(), "a launch configuration is needed"),
    (dict(grid=4), "grid and block go together: block is missing"),
    (dict(block=32), "grid and block go together: grid is missing"),
])
def test_incomplete_or_conflicting_configuration(kwargs, message):
    with pytest.raises(ValueError, match=message):
        resolve_launch(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(grid=0, block=32), r"grid must be positive in every dimension, got 0"),
    (dict(grid=4, block=(32, -1)), r"block must be positive in every dimension"),
    (dict(launch_dims=(10, -1)), r"launch_dims must be non-negative"),
    (dict(grid=(1, 1, 1, 1), block=1), r"grid must have 1 to 3 dimensions, got 4"),
    (dict(grid=4, block=()), r"block must have 1 to 3 dimensions, got 0"),
    (dict(launch_dims=(1, 2, 3, 4)), r"launch_dims must have 1 to 3 dimensions, got 4"),
    (dict(grid=2.5, block=32), r"grid must be an int or a tuple of 1 to 3 ints, got 2.5"),
    (dict(grid=4, block=(32.0,)), r"block must be an int or a tuple"),
    (dict(grid="4", block=32), r"grid must be an int or a tuple"),
    (dict(grid=(4, None), block=32), r"grid must be an int or a tuple"),
    (dict(launch_dims=100.0), r"launch_dims must be an int or a tuple"),
    (dict(grid=True, block=32), r"grid must be an int or a tuple"),
    (dict(grid=4, block=(32, False)), r"block must be an int or a tuple"),
    (dict(launch_dims=64, threads_per_block=100.7), r"threads_per_block must be an int, got 100.7"),
    (dict(launch_dims=64, threads_per_block=True), r"threads_per_block must be an int"),
])
def test_bad_dimensions(kwargs, message):
    with pytest.raises(ValueError, match=message):
        resolve_launch(**kwargs)


@pytest.mark.parametrize("launch_dims, want", [
    (0, ((0, 1, 1), (256, 1, 1))),
    ((10, 0), ((1, 0, 1), (16, 16, 1))),
    ((0, 32, 8), ((0, 4, 2), (8, 8, 4))),
])
def test_launch_dims_of_zero_give_an_empty_grid(launch_dims, want):
    # brainevent skips such a launch and fills the outputs with zeros.
    assert resolve_launch(launch_dims=launch_dims) == want


@pytest.mark.parametrize("tpb", [0, -32, 1025, 4096])
def test_threads_per_block_out_of_range(tpb):
    with pytest.raises(ValueError, match=r"threads_per_block must be 1 to 1024, got "
                                         + str(tpb)):
        resolve_launch(launch_dims=1000, threads_per_block=tpb)


def test_numpy_sizes_are_accepted():
    assert resolve_launch(grid=np.array([4, 2]), block=np.int64(32)) == ((4, 2, 1), (32, 1, 1))
    assert resolve_launch(launch_dims=np.array((33, 17))) == ((3, 2, 1), (16, 16, 1))


def test_threads_per_block_limits_are_inclusive():
    assert resolve_launch(launch_dims=10, threads_per_block=1) == ((10, 1, 1), (1, 1, 1))
    assert resolve_launch(launch_dims=2048, threads_per_block=1024) == ((2, 1, 1), (1024, 1, 1))


@pytest.mark.parametrize("block, threads", [((32, 32, 2), 2048), ((1024, 2), 2048),
                                            ((64, 32), 2048), ((16, 16, 8), 2048)])
def test_block_over_1024_threads(block, threads):
    with pytest.raises(ValueError, match=rf"block \(.*\) has {threads} threads; CUDA allows at "
                                         rf"most 1024"):
        resolve_launch(grid=1, block=block)


def test_block_of_exactly_1024_threads_is_allowed():
    assert resolve_launch(grid=1, block=(32, 32))[1] == (32, 32, 1)
    assert resolve_launch(grid=1, block=(16, 16, 4))[1] == (16, 16, 4)


@pytest.mark.parametrize("kwargs, message", [
    (dict(grid=2**31, block=1), r"grid x is 2147483648, more than CUDA's 2147483647"),
    (dict(grid=(1, 65536), block=1), r"grid y is 65536, more than CUDA's 65535"),
    (dict(grid=(1, 1, 65536), block=1), r"grid z is 65536, more than CUDA's 65535"),
    (dict(grid=1, block=2048), r"block x is 2048, more than CUDA's 1024"),
    (dict(grid=1, block=(1, 1025)), r"block y is 1025, more than CUDA's 1024"),
    (dict(grid=1, block=(1, 1, 65)), r"block z is 65, more than CUDA's 64"),
    # launch_dims that need more blocks than CUDA allows along x
    (dict(launch_dims=2**40), r"grid x is 4294967296, more than CUDA's 2147483647"),
])
def test_cuda_axis_limits(kwargs, message):
    with pytest.raises(ValueError, match=message):
        resolve_launch(**kwargs)


def test_axis_limits_themselves_are_allowed():
    g, b = resolve_launch(grid=(2**31 - 1, 65535, 65535), block=(1, 1, 64))
    assert g == (2**31 - 1, 65535, 65535) and b == (1, 1, 64)


# =========================================================================== find_numba_library
def _exe(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def no_package_copy(monkeypatch, tmp_path):
    """Makes the package's ``lib/`` (an installed tree) a fresh, empty directory, so
    the search does not depend on how bekc was installed. Returns that ``lib/``."""
    pkg = tmp_path / "pkg" / "bekc"
    (pkg / "lib").mkdir(parents=True)
    monkeypatch.setattr(_numba_native, "__file__", str(pkg / "_numba_native.py"))
    monkeypatch.delenv("BEKC_NUMBA_LIBRARY", raising=False)
    return pkg / "lib"


def test_env_variable_pointing_at_a_file_wins(no_package_copy, monkeypatch, tmp_path):
    # Copies elsewhere that would otherwise be found.
    (no_package_copy / LIB_NAME).write_bytes(b"package copy")
    monkeypatch.setenv("BEKC", str(_exe(tmp_path / "bin" / "bekc")))
    (tmp_path / "bin" / LIB_NAME).write_bytes(b"beside bekc")
    chosen = tmp_path / "chosen" / "libmine.so"
    chosen.parent.mkdir()
    chosen.write_bytes(b"x")
    monkeypatch.setenv("BEKC_NUMBA_LIBRARY", str(chosen))
    assert _numba_native.find_numba_library() == str(chosen)


def test_env_variable_relative_path_is_made_absolute(no_package_copy, monkeypatch, tmp_path):
    (tmp_path / "rel.so").write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BEKC_NUMBA_LIBRARY", "rel.so")
    assert _numba_native.find_numba_library() == str(tmp_path / "rel.so")


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_env_variable_pointing_at_nothing_is_an_error(no_package_copy, monkeypatch, tmp_path,
                                                      kind):
    target = tmp_path / "not-here.so"
    if kind == "directory":
        target.mkdir()
    # Even with a library beside the binary: the variable is not silently ignored.
    monkeypatch.setenv("BEKC", str(_exe(tmp_path / "bin" / "bekc")))
    (tmp_path / "bin" / LIB_NAME).write_bytes(b"beside bekc")
    monkeypatch.setenv("BEKC_NUMBA_LIBRARY", str(target))
    with pytest.raises(bekc.LibraryLoadError) as info:
        _numba_native.find_numba_library()
    assert "$BEKC_NUMBA_LIBRARY" in str(info.value)
    assert str(target) in str(info.value)
    assert "not a file" in str(info.value)


def test_empty_env_variable_counts_as_unset(no_package_copy, monkeypatch, tmp_path):
    monkeypatch.setenv("BEKC_NUMBA_LIBRARY", "")
    monkeypatch.setenv("BEKC", str(_exe(tmp_path / "bin" / "bekc")))
    (tmp_path / "bin" / LIB_NAME).write_bytes(b"x")
    assert _numba_native.find_numba_library() == str(tmp_path / "bin" / LIB_NAME)


def test_found_beside_the_bekc_binary(no_package_copy, monkeypatch, tmp_path):
    monkeypatch.setenv("BEKC", str(_exe(tmp_path / "build" / "bekc")))
    (tmp_path / "build" / LIB_NAME).write_bytes(b"x")
    assert _numba_native.find_numba_library() == str(tmp_path / "build" / LIB_NAME)


def test_a_symlinked_bekc_leads_to_the_build_tree(no_package_copy, monkeypatch, tmp_path):
    # bin/bekc -> build/bekc (as `ln -s` into a bin directory leaves it): the
    # library is looked for beside the real binary, not beside the link.
    real = _exe(tmp_path / "build" / "bekc")
    (tmp_path / "build" / LIB_NAME).write_bytes(b"x")
    (tmp_path / "bin").mkdir()
    os.symlink(real, tmp_path / "bin" / "bekc")
    monkeypatch.setenv("BEKC", str(tmp_path / "bin" / "bekc"))
    assert _numba_native.find_numba_library() == str(tmp_path / "build" / LIB_NAME)


def test_the_installed_package_copy_comes_before_the_binary(no_package_copy, monkeypatch,
                                                            tmp_path):
    (no_package_copy / LIB_NAME).write_bytes(b"installed")
    monkeypatch.setenv("BEKC", str(_exe(tmp_path / "build" / "bekc")))
    (tmp_path / "build" / LIB_NAME).write_bytes(b"build tree")
    assert _numba_native.find_numba_library() == str(no_package_copy / LIB_NAME)


def test_found_in_the_install_prefix_of_the_bekc_binary(no_package_copy, monkeypatch, tmp_path):
    # `cmake --install` puts bekc in PREFIX/bin and the library in the package
    # copy under PREFIX/lib/bekc/python/bekc/lib.
    monkeypatch.setenv("BEKC", str(_exe(tmp_path / "prefix" / "bin" / "bekc")))
    installed = tmp_path / "prefix" / "lib" / "bekc" / "python" / "bekc" / "lib" / LIB_NAME
    installed.parent.mkdir(parents=True)
    installed.write_bytes(b"x")
    assert _numba_native.find_numba_library() == str(installed)
    # A library right beside the binary (a build tree) comes first.
    (tmp_path / "prefix" / "bin" / LIB_NAME).write_bytes(b"x")
    assert _numba_native.find_numba_library() == str(tmp_path / "prefix" / "bin" / LIB_NAME)


def test_nowhere_lists_where_it_looked_and_how_to_build(no_package_copy, monkeypatch, tmp_path):
    monkeypatch.setenv("BEKC", str(_exe(tmp_path / "build" / "bekc")))  # no library beside it
    with pytest.raises(bekc.LibraryLoadError) as info:
        _numba_native.find_numba_library()
    message = str(info.value)
    assert f"cannot find {LIB_NAME}" in message
    assert str(no_package_copy / LIB_NAME) in message
    assert str(tmp_path / "build" / LIB_NAME) in message
    assert "cmake --build build --target bekc_numba" in message
    assert "BEKC_NUMBA_LIBRARY" in message


def test_nowhere_and_no_bekc_binary(no_package_copy, monkeypatch, tmp_path):
    monkeypatch.setenv("BEKC", str(tmp_path / "no-such-bekc"))
    with pytest.raises(bekc.LibraryLoadError) as info:
        _numba_native.find_numba_library()
    message = str(info.value)
    assert "next to the bekc binary" in message
    assert "no-such-bekc" in message  # why the binary could not be found
    assert str(no_package_copy / LIB_NAME) in message
    assert "cmake --build build --target bekc_numba" in message


# =========================================================================== without Numba
@pytest.fixture
def no_numba(monkeypatch):
    """``import numba`` fails, as on a machine without it."""
    monkeypatch.setitem(sys.modules, "numba", None)
    for name in [m for m in sys.modules if m.startswith("numba.")]:
        monkeypatch.setitem(sys.modules, name, None)


def test_numba_cuda_kernel_without_numba_says_what_to_install(no_numba):
    def kernel(x, y):
        pass

    with pytest.raises(ImportError, match="pip install numba-cuda"):
        bekc.numba_cuda_kernel(kernel, jax.ShapeDtypeStruct((4,), jnp.float32), grid=1, block=4)


def test_numba_cuda_callable_without_numba_fails_at_call(no_numba, native, monkeypatch):
    monkeypatch.setattr(_numba_native, "_NATIVE", native)  # no second load of the library

    def body(x, y, stream):
        raise AssertionError("never called")

    fn = bekc.numba_cuda_callable(body, jax.ShapeDtypeStruct((4,), jnp.float32))
    with pytest.raises(ImportError, match="pip install numba-cuda"):
        fn(jnp.ones(4, jnp.float32))


def test_not_a_kernel_error_is_what_brainevent_callers_catch():
    assert issubclass(bekc.NotAKernelError, bekc.BekcError)
    assert issubclass(bekc.NotAKernelError, TypeError)
    assert issubclass(bekc.NotAKernelError, AssertionError)


# =========================================================================== numba_cuda_callable arguments
S4 = jax.ShapeDtypeStruct((4,), jnp.float32)


def _body(*arrays):
    pass


@pytest.mark.parametrize("fn", [42, "f", None, [_body]])
def test_callable_rejects_a_non_callable(fn):
    with pytest.raises(TypeError, match="numba_cuda_callable expects a Python callable, got "
                                        + type(fn).__name__):
        bekc.numba_cuda_callable(fn, S4)


@pytest.mark.parametrize("outs", [[], (), None, {}])
def test_callable_needs_at_least_one_output(outs):
    with pytest.raises(ValueError, match="outs must hold at least one jax.ShapeDtypeStruct"):
        bekc.numba_cuda_callable(_body, outs)


@pytest.mark.parametrize("outs, kind", [([S4, 3], "int"), ("f4", "str"), ([S4, (4,)], "int")])
def test_callable_outs_must_be_shape_dtype_structs(outs, kind):
    with pytest.raises(TypeError, match=f"jax.ShapeDtypeStruct values .*got {kind}"):
        bekc.numba_cuda_callable(_body, outs)


def test_callable_keeps_the_outs_structure_and_specs():
    f = bekc.numba_cuda_callable(_body, {"a": S4, "b": [jax.ShapeDtypeStruct((2, 3), jnp.int32)]})
    assert [(s.shape, s.dtype) for s in f.specs] == [((4,), np.float32), ((2, 3), np.int32)]
    assert jax.tree_util.tree_unflatten(f.tree, [1, 2]) == {"a": 1, "b": [2]}


@pytest.mark.parametrize("where, args, outs", [
    ("input 0", [jnp.ones(4, jnp.bfloat16)], S4),
    ("output 1", [jnp.ones(4, jnp.float32)], [S4, jax.ShapeDtypeStruct((4,), jnp.bfloat16)]),
])
def test_callable_refuses_dtypes_numba_cannot_hold(where, args, outs):
    fn = bekc.numba_cuda_callable(_body, outs)
    # Refused before the library or Numba is needed.
    with pytest.raises(TypeError, match=f"{where} has dtype bfloat16, which Numba-CUDA arrays "
                                        f"cannot hold"):
        fn(*args)


# =========================================================================== libbekc_numba.so
@pytest.fixture(scope="module")
def numba_lib(numba_library):
    return str(numba_library)


@pytest.fixture(scope="module")
def native(numba_lib):
    return _numba_native._Native(numba_lib)


def _add(native, name="k", handle=0x1234, grid=(1, 1, 1), block=(32, 1, 1), dtypes=(F32, F32),
         ranks=(1, 1), num_args=1):
    return native.add_launch(name, handle, grid, block, 0, False, list(dtypes), list(ranks),
                             num_args)


def test_library_speaks_the_package_abi(native):
    assert native.lib.bekc_numba_abi_version() == _numba_native._ABI_VERSION


def test_abi_mismatch_is_reported(numba_lib, monkeypatch):
    monkeypatch.setattr(_numba_native, "_ABI_VERSION", _numba_native._ABI_VERSION + 1)
    with pytest.raises(bekc.LibraryLoadError) as info:
        _numba_native._Native(numba_lib)
    message = str(info.value)
    assert numba_lib in message
    assert (f"speaks ABI {_numba_native._ABI_VERSION - 1}, this bekc package "
            f"{_numba_native._ABI_VERSION}") in message
    assert "rebuild" in message


def test_a_library_that_is_not_libbekc_numba(tmp_path):
    import ctypes.util
    libm = ctypes.util.find_library("m")
    if libm is None:
        pytest.skip("no libm to load")
    with pytest.raises(bekc.LibraryLoadError, match="is not libbekc_numba"):
        _numba_native._Native(libm)


def test_a_file_that_is_not_a_library(tmp_path):
    bogus = tmp_path / LIB_NAME
    bogus.write_text("not an ELF file")
    with pytest.raises(bekc.LibraryLoadError, match=re.escape(f"cannot load {bogus}")):
        _numba_native._Native(str(bogus))


def _capsule_pointer(capsule) -> int:
    get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    return get(capsule, None)


def test_both_targets_are_registered_for_cuda(numba_lib, monkeypatch):
    real = jax.ffi.register_ffi_target
    calls = []

    def spy(name, capsule, platform="cpu", **kwargs):
        calls.append((name, _capsule_pointer(capsule), platform))
        return real(name, capsule, platform=platform, **kwargs)  # the real registration too

    monkeypatch.setattr(jax.ffi, "register_ffi_target", spy)
    n = _numba_native._Native(numba_lib)
    address = lambda fn: ctypes.cast(fn, ctypes.c_void_p).value  # noqa: E731
    assert calls == [
        (_numba_cuda.LAUNCH_TARGET, address(n.lib.bekc_numba_launch), "CUDA"),
        (_numba_cuda.CALL_TARGET, address(n.lib.bekc_numba_call), "CUDA"),
    ]
    assert _numba_cuda.LAUNCH_TARGET == "bekc.numba_cuda_kernel"
    assert _numba_cuda.CALL_TARGET == "bekc.numba_cuda_callable"


def test_a_failed_registration_is_a_load_error(numba_lib, monkeypatch):
    def refuse(name, capsule, platform="cpu", **kwargs):
        raise RuntimeError("jaxlib said no")

    monkeypatch.setattr(jax.ffi, "register_ffi_target", refuse)
    with pytest.raises(bekc.LibraryLoadError, match=r"register_ffi_target\('bekc.numba_cuda_kernel'"
                                                    r", platform='CUDA'\) failed: jaxlib said no"):
        _numba_native._Native(numba_lib)


def test_native_is_loaded_once_from_the_library_found(numba_lib, monkeypatch):
    monkeypatch.setattr(_numba_native, "_NATIVE", None)
    monkeypatch.setenv("BEKC_NUMBA_LIBRARY", numba_lib)
    first = _numba_native._native()
    assert first.path == numba_lib
    assert _numba_native._native() is first


def test_add_launch_returns_increasing_ids(native):
    ids = [_add(native, name=f"k{i}") for i in range(4)]
    assert all(isinstance(i, int) and i >= 0 for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert ids[1:] == [ids[0] + 1, ids[0] + 2, ids[0] + 3]


def test_a_fresh_launch_has_no_statistics(native):
    id_ = _add(native, grid=(4, 2, 1), block=(16, 16, 1), dtypes=(F32, S32, F32),
               ranks=(2, 1, 0), num_args=2)
    assert native.launch_stats(id_) == (0, 0)


def test_launch_stats_of_an_unknown_id(native):
    # The library's answer for an id it never gave out: -1 launches.
    assert native.launch_stats(2**40)[0] == -1
    assert native.launch_stats(-1)[0] == -1


@pytest.mark.parametrize("kwargs, message", [
    (dict(handle=0), "mine: no CUDA function handle"),
    (dict(grid=(0, 1, 1)), "mine: grid and block sizes must be positive"),
    (dict(block=(32, 1, 0)), "mine: grid and block sizes must be positive"),
    (dict(dtypes=(F32, 0)), "mine: a buffer has a dtype Numba arrays cannot hold"),
    (dict(dtypes=(F32, 21)), "mine: a buffer has a dtype Numba arrays cannot hold"),  # int4
    (dict(dtypes=(17, F32)), "mine: a buffer has a dtype Numba arrays cannot hold"),  # token
    (dict(ranks=(1, 65)), "mine: a buffer has an unsupported rank"),
    (dict(ranks=(-1, 1)), "mine: a buffer has an unsupported rank"),
    (dict(num_args=3), "mine: negative buffer count"),
])
def test_add_launch_refusals_carry_the_library_message(native, kwargs, message):
    with pytest.raises(bekc.BekcError) as info:
        _add(native, name="mine", **kwargs)
    assert str(info.value) == message


def test_a_refused_launch_takes_no_id(native):
    before = _add(native)
    with pytest.raises(bekc.BekcError):
        _add(native, handle=0)
    assert _add(native) == before + 1


def test_add_callable(native):
    def callback(id_, pointers, count, stream, error, error_size):
        return 0

    kept = len(native.callbacks)
    first = native.add_callable("cb", callback, 1, 1)
    second = native.add_callable("cb", callback, 2, 0)
    assert first >= 0 and second == first + 1
    # Both ctypes callbacks are kept alive (the library may call them any time later).
    assert len(native.callbacks) == kept + 2
    with pytest.raises(bekc.BekcError, match="bad: libbekc_numba refused the callable"):
        native.add_callable("bad", callback, -1, 1)
    assert len(native.callbacks) == kept + 2


# --------------------------------------------------------------------------- the handlers on CPU
# XLA's CPU client can run the two handlers up to the point where they need
# CUDA (the driver, or XLA's GPU stream), so everything they check about a call
# is testable here.
@pytest.fixture(scope="module")
def cpu_targets(native):
    suffix = uuid.uuid4().hex[:8]
    names = {"launch": f"bekc_test_{suffix}.numba_launch", "call": f"bekc_test_{suffix}.numba_call"}
    jax.ffi.register_ffi_target(names["launch"], jax.ffi.pycapsule(native.lib.bekc_numba_launch),
                                platform="cpu")
    jax.ffi.register_ffi_target(names["call"], jax.ffi.pycapsule(native.lib.bekc_numba_call),
                                platform="cpu")
    return names


def _run(target, outs, *args, **attrs):
    return jax.block_until_ready(jax.ffi.ffi_call(target, outs)(*args, **attrs))


def test_launch_handler_needs_the_bekc_id_attribute(cpu_targets):
    x = jnp.ones(4, jnp.float32)
    with pytest.raises(Exception, match="bekc.numba_cuda_kernel: expected one attribute, bekc_id"):
        _run(cpu_targets["launch"], S4, x)
    with pytest.raises(Exception, match="expected one attribute, bekc_id"):
        _run(cpu_targets["launch"], S4, x, bekc_id=np.float32(0))


def test_launch_handler_unknown_id(cpu_targets):
    with pytest.raises(Exception, match=r"bekc.numba_cuda_kernel: no kernel with bekc_id "
                                        r"1099511627776"):
        _run(cpu_targets["launch"], S4, jnp.ones(4, jnp.float32), bekc_id=np.int64(2**40))


@pytest.mark.parametrize("args, outs, message", [
    ([jnp.ones(4, jnp.int32)], S4,
     "k_sig: input 0 is int32 with 1 dimensions; the kernel was compiled for float32 with 1"),
    ([jnp.ones((2, 2), jnp.float32)], S4,
     "k_sig: input 0 is float32 with 2 dimensions; the kernel was compiled for float32 with 1"),
    ([jnp.ones(4, jnp.float32)], jax.ShapeDtypeStruct((4,), jnp.int32),
     "k_sig: output 0 is int32 with 1 dimensions; the kernel was compiled for float32 with 1"),
    ([jnp.ones(4, jnp.float32), jnp.ones(4, jnp.float32)], S4,
     "k_sig: compiled for 1 inputs and 1 outputs, called with 2 and 1"),
    ([jnp.ones(4, jnp.float32)], [S4, S4],
     "k_sig: compiled for 1 inputs and 1 outputs, called with 1 and 2"),
])
def test_launch_handler_checks_the_compiled_signature(native, cpu_targets, args, outs, message):
    id_ = _add(native, name="k_sig")
    with pytest.raises(Exception, match=message):
        _run(cpu_targets["launch"], outs, *args, bekc_id=np.int64(id_))
    assert native.launch_stats(id_) == (0, 0)  # nothing was launched


def _skip_with_a_cuda_driver():
    """These tests see the handler fail where it opens the CUDA driver."""
    if os.environ.get("BEKC_NUMBA_LIBCUDA"):
        pytest.skip("$BEKC_NUMBA_LIBCUDA names a driver library")
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("this machine has a CUDA driver")
    except OSError:
        pass


def test_launch_handler_without_a_cuda_driver(native, cpu_targets):
    _skip_with_a_cuda_driver()
    id_ = _add(native, name="k_nodriver")
    with pytest.raises(Exception, match=r"k_nodriver: cannot open libcuda.so.1 \(is the NVIDIA "
                                        r"driver installed\?\)"):
        _run(cpu_targets["launch"], S4, jnp.ones(4, jnp.float32), bekc_id=np.int64(id_))
    assert native.launch_stats(id_) == (0, 0)


def test_call_handler_checks_id_and_counts(native, cpu_targets):
    called = []

    def callback(id_, pointers, count, stream, error, error_size):
        called.append(id_)
        return 0

    id_ = native.add_callable("cb_counts", callback, 1, 1)
    x = jnp.ones(4, jnp.float32)
    with pytest.raises(Exception, match=r"bekc.numba_cuda_callable: no callable with bekc_id "
                                        r"1099511627776"):
        _run(cpu_targets["call"], S4, x, bekc_id=np.int64(2**40))
    with pytest.raises(Exception, match=r"cb_counts: expects 1 inputs and 1 outputs, called with "
                                        r"2 and 1"):
        _run(cpu_targets["call"], S4, x, x, bekc_id=np.int64(id_))
    with pytest.raises(Exception, match="bekc.numba_cuda_callable: expected one attribute"):
        _run(cpu_targets["call"], S4, x)
    assert called == []


# --------------------------------------------------------------------------- vmap in the handler
# Entries allowed under vmap take one leading batch axis on every buffer; the
# checks run before the handler needs CUDA, so they are testable here.
def _vmapped_call(target, id_, out, levels, vmap_method="expand_dims"):
    fn = lambda x: jax.ffi.ffi_call(target, out, vmap_method=vmap_method)(x, bekc_id=np.int64(id_))
    for _ in range(levels):
        fn = jax.vmap(fn)
    return fn


def test_launch_handler_refuses_nested_vmap(native, cpu_targets):
    id_ = native.add_launch("k_nested", 0x1234, (1, 1, 1), (32, 1, 1), 0, False, [F32, F32],
                            [1, 1], 1, vmap=True)
    fn = _vmapped_call(cpu_targets["launch"], id_, S4, levels=2)
    with pytest.raises(Exception, match=r"k_nested: output 0 has 3 dimensions, 2 more than the "
                                        r"kernel was compiled for; only one level of vmap is "
                                        r"supported"):
        jax.block_until_ready(fn(jnp.ones((2, 3, 4), jnp.float32)))
    assert native.launch_stats(id_) == (0, 0)


@pytest.mark.parametrize("vmap_method", ["expand_dims", "broadcast_all"])
def test_launch_handler_takes_one_vmap_axis(native, cpu_targets, vmap_method):
    _skip_with_a_cuda_driver()
    id_ = native.add_launch("k_vmap1", 0x1234, (1, 1, 1), (32, 1, 1), 0, False, [F32, F32],
                            [1, 1], 1, vmap=True)
    fn = _vmapped_call(cpu_targets["launch"], id_, S4, levels=1, vmap_method=vmap_method)
    # Every check passed: the handler got as far as opening the driver.
    with pytest.raises(Exception, match=r"k_vmap1: cannot open libcuda.so.1"):
        jax.block_until_ready(fn(jnp.ones((5, 4), jnp.float32)))


def test_launch_handler_checks_the_leading_axis_under_vmap(native, cpu_targets):
    id_ = native.add_launch("k_lead", 0x1234, (1, 1, 1), (32, 1, 1), 0, False, [F32, F32],
                            [1, 1], 1, vmap=True)
    out = jax.ShapeDtypeStruct((5, 4), jnp.float32)
    with pytest.raises(Exception, match=r"k_lead: input 0 has leading dimension 3 under vmap, "
                                        r"neither the batch 5 nor 1"):
        _run(cpu_targets["launch"], out, jnp.ones((3, 4), jnp.float32), bekc_id=np.int64(id_))
    with pytest.raises(Exception, match=r"k_lead: input 0 is float32 with 1 dimensions; the "
                                        r"kernel was compiled for float32 with 1, plus one "
                                        r"leading vmap axis"):
        _run(cpu_targets["launch"], out, jnp.ones(4, jnp.float32), bekc_id=np.int64(id_))
    assert native.launch_stats(id_) == (0, 0)


def test_launch_handler_without_vmap_refuses_a_batch_axis(native, cpu_targets):
    id_ = _add(native, name="k_novmap")
    out = jax.ShapeDtypeStruct((5, 4), jnp.float32)
    with pytest.raises(Exception, match=r"k_novmap: input 0 is float32 with 2 dimensions; the "
                                        r"kernel was compiled for float32 with 1") as info:
        _run(cpu_targets["launch"], out, jnp.ones((5, 4), jnp.float32), bekc_id=np.int64(id_))
    assert "leading vmap axis" not in str(info.value)


def test_a_fresh_launch_has_no_stream(native):
    assert native.launch_stream(_add(native)) == 0
    assert native.launch_stream(2**40) == 0
