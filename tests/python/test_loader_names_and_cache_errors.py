"""bekc's Python loaders accept the module names brainevent accepts (a dash in
the name included), and a cache that cannot be written is a CacheError naming
the cache and the ways to choose another, never a compile error."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import bekc
from support.kernels import SCALE_CPP

def test_load_cpp_inline_takes_a_module_name_with_a_dash(bekc_bin):
    jax = pytest.importorskip("jax")
    name = f"my-kernels-{uuid.uuid4().hex[:8]}"
    mod = bekc.load_cpp_inline(name=name, cpp_sources=SCALE_CPP)
    assert list(mod.targets) == [f"{name}.scale"]
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(jax.jit(lambda v: mod.scale(v, factor=2.0))(x), 2 * x)
    # The target is registered under the name as written, for raw ffi_call users.
    y = jax.ffi.ffi_call(f"{name}.scale", jax.ShapeDtypeStruct(x.shape, x.dtype))(
        x, factor=np.float32(3.0))
    np.testing.assert_allclose(y, 3 * x)


@pytest.fixture
def blocked_cache(bekc_bin, tmp_path, monkeypatch):
    """$BEKC_CACHE_DIR under a regular file: nothing can be created there."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    before = bekc.get_cache_dir()
    bekc.set_cache_dir(None)
    monkeypatch.setenv("BEKC_CACHE_DIR", str(blocker / "cache"))
    yield blocker / "cache"
    bekc.set_cache_dir(before)


def test_inline_source_that_cannot_be_written_is_a_cache_error(blocked_cache):
    with pytest.raises(bekc.CacheError) as e:
        bekc.load_cpp_inline(name="blocked", cpp_sources=SCALE_CPP)
    assert not isinstance(e.value, bekc.CompileError)
    src = str(e.value).split(" into ")[0].split("inline source ")[1]
    assert src.startswith(str(blocked_cache / "src")) and src.endswith("/blocked.cpp")
    assert str(e.value) == (
        f"cannot write the inline source {src} into bekc's cache {blocked_cache}: Not a "
        f"directory; choose another cache with bekc.set_cache_dir(DIR), $BEKC_CACHE_DIR=DIR, "
        f"or --cache-dir DIR for the bekc command")
    assert e.value.cache_dir == str(blocked_cache)


def test_cache_error_through_load_cpp_file_is_not_a_compile_error(blocked_cache, tmp_path):
    src = tmp_path / "scale.cpp"
    src.write_text(SCALE_CPP)
    with pytest.raises(bekc.CacheError) as e:
        bekc.load_cpp_file(str(src), name="blocked_file")
    assert not isinstance(e.value, bekc.CompileError) and isinstance(e.value, OSError)
    assert e.value.returncode == 4
    assert e.value.stderr == (
        f"bekc: error: cannot open {blocked_cache}: Not a directory\n"
        f"note: the cache is {blocked_cache}; choose another with --cache-dir DIR, "
        f"$BEKC_CACHE_DIR=DIR, or bekc.set_cache_dir(DIR) from Python\n")
