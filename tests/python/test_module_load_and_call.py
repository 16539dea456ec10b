"""bekc.load + Module calls against real XLA FFI handlers (data/ref_ffi.cc)."""

from __future__ import annotations

import json
import os
import shutil
import struct
import threading

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import bekc  # noqa: E402
from conftest import make_manifest, unique_prefix  # noqa: E402

RNG = np.random.default_rng(1234)


def rand(*shape):
    return jnp.asarray(RNG.uniform(0.5, 2.0, size=shape).astype(np.float32))


def test_load_register_and_call(ref_manifest):
    path, prefix = ref_manifest
    mod = bekc.load(path)
    a, b = rand(1024), rand(1024)
    np.testing.assert_allclose(mod.ref_add(a, b), a + b, rtol=1e-6)
    # the plain JAX way works on the registered name
    r = jax.ffi.ffi_call(f"{prefix}.ref_add", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)
    np.testing.assert_allclose(r, a + b, rtol=1e-6)
    np.testing.assert_allclose(mod.ref_scale(a, scale=3.0), a * 3.0, rtol=1e-6)
    assert f"{prefix}.ref_add" in bekc.registered_targets()


def test_a_manifest_below_a_directory_whose_name_is_not_utf8_loads(ref_libs, tmp_path):
    """A manifest and its library in a directory named b"caf\\xe9" (a legal
    Linux name), naming paths below it as bekc writes them ("\\udce9"),
    load and run."""
    latin = tmp_path / os.fsdecode(b"caf\xe9")
    prefix = unique_prefix()
    path = make_manifest(latin / "build", ref_libs[1], prefix)
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    for target in manifest["targets"]:
        target["source"] = f"{latin}/ref_ffi.cc:1"
    manifest["toolchain"]["cxx"]["path"] = f"{latin}/g++"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    assert b"\\udce9" in open(path, "rb").read()
    mod = bekc.load(path)
    a, b = rand(8), rand(8)
    np.testing.assert_allclose(mod.ref_add(a, b), a + b, rtol=1e-6)


def test_module_introspection(ref_manifest):
    path, prefix = ref_manifest
    mod = bekc.load(os.path.dirname(path))  # a directory works too
    assert set(mod.targets) == {f"{prefix}.{f}" for f in
                                ("ref_add", "ref_scale", "ref_two_out", "ref_attrs")}
    assert mod.manifest["schema"] == 1
    assert mod.library_path == os.path.join(os.path.dirname(path), "libref.so")
    assert mod.platforms == ("cpu",) and mod.registered
    r = repr(mod)
    assert prefix in r and "4 targets" in r and "cpu" in r and "libref.so" in r
    d = dir(mod)
    for f in ("ref_add", "ref_scale", "ref_two_out", "ref_attrs", "targets", "manifest"):
        assert f in d
    assert mod["ref_add"] is mod.ref_add is mod[f"{prefix}.ref_add"]
    assert "ref_scale" in mod and len(mod) == 4
    assert "scale: float32" in repr(mod.ref_scale)
    with pytest.raises(AttributeError, match="did you mean 'ref_add'"):
        mod.ref_ad
    with pytest.raises(KeyError):
        mod["nope"]


def test_under_jit_and_vmap(ref_manifest):
    path, _ = ref_manifest
    mod = bekc.load(path)

    @jax.jit
    def f(a, b):
        return mod.ref_scale(mod.ref_add(a, b), scale=0.5)

    a, b = rand(3, 17), rand(3, 17)
    np.testing.assert_allclose(f(a, b), (a + b) * 0.5, rtol=1e-6)
    v = jax.vmap(lambda x, y: mod.ref_add(x, y, vmap_method="sequential"))(a, b)
    np.testing.assert_allclose(v, a + b, rtol=1e-6)


DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "docs")


def assert_names_a_docs_section(message: str) -> None:
    """The error points at a heading that exists: docs/<page>.md#<anchor>."""
    import re
    m = re.search(r"docs/(\w+\.md)#([a-z0-9-]+)", message)
    assert m, message
    with open(os.path.join(DOCS, m.group(1)), encoding="utf-8") as f:
        anchors = {re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                   for line in f if line.startswith("#")}
    assert m.group(2) in anchors, f"{m.group(0)} names no heading of docs/{m.group(1)}"


def test_vmap_without_a_method_is_a_bekc_error_naming_the_target(ref_manifest):
    """Under jax.vmap, a target without a vmap_method (its own or the call's)
    raises NotBatchableError (a NotImplementedError, as JAX's) naming the
    target, how to declare a method and the docs section; with jit on either side too."""
    path, prefix = ref_manifest
    mod = bekc.load(path)
    a, b = rand(3, 5), rand(3, 5)
    add = lambda x, y: mod.ref_add(x, y)  # noqa: E731
    for batched in (jax.vmap(add), jax.jit(jax.vmap(add)), jax.vmap(jax.jit(add))):
        with pytest.raises(bekc.NotBatchableError) as e:
            batched(a, b)
        message = str(e.value)
        assert f"{prefix}.ref_add" in message and "vmap_method" in message
        assert 'mod.ref_add.vmap_method = "broadcast_all"' in message
        assert_names_a_docs_section(message)
        assert isinstance(e.value, NotImplementedError) and e.value.target == f"{prefix}.ref_add"


def test_grad_is_a_bekc_error_naming_the_target(ref_manifest):
    """jax.grad (and jax.jvp) of a target raises NotDifferentiableError (a
    ValueError, as JAX's) naming the target, jax.custom_vjp and the docs section."""
    path, prefix = ref_manifest
    mod = bekc.load(path)
    x = rand(4)
    loss = lambda v: mod.ref_scale(v, scale=2.0).sum()  # noqa: E731
    for differentiate in (lambda: jax.grad(loss)(x), lambda: jax.grad(jax.jit(loss))(x),
                          lambda: jax.jvp(loss, (x,), (x,))):
        with pytest.raises(bekc.NotDifferentiableError) as e:
            differentiate()
        message = str(e.value)
        assert f"{prefix}.ref_scale" in message and "jax.custom_vjp" in message
        assert_names_a_docs_section(message)
        assert isinstance(e.value, ValueError)
    # Plain and jitted calls, and gradients that do not flow through the kernel, still work.
    np.testing.assert_allclose(jax.jit(lambda v: mod.ref_scale(v, scale=2.0))(x), 2 * x,
                               rtol=1e-6)
    y = rand(4)
    beside = jax.jit(lambda v, w: (v * mod.ref_scale(w, scale=2.0)).sum())
    np.testing.assert_allclose(jax.grad(beside)(x, y), 2 * y, rtol=1e-6)


def test_a_declared_vmap_method_batches_the_target(ref_manifest):
    """A target's vmap_method (the attribute, Module.set_vmap_method or
    bekc.load's keyword) serves every call that names none; the call's wins."""
    path, _ = ref_manifest
    mod = bekc.load(path)
    assert mod.ref_add.vmap_method is None
    a, b = rand(4, 6), rand(6)
    mod.ref_add.vmap_method = "broadcast_all"  # elementwise: b is broadcast along the batch
    np.testing.assert_allclose(jax.vmap(mod.ref_add, in_axes=(0, None))(a, b), a + b, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.vmap(mod.ref_add, in_axes=(1, None)))(a.T, b),
                               a + b, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(jax.vmap(mod.ref_add))(a[None], a[None]), 2 * a[None],
                               rtol=1e-6)
    seq = jax.vmap(lambda x: mod.ref_add(x, b, vmap_method="sequential"))(a)
    np.testing.assert_allclose(seq, a + b, rtol=1e-6)

    mod.set_vmap_method(None)
    assert mod.ref_add.vmap_method is None
    assert bekc.load(path, vmap_method={"ref_scale": "sequential"}) is mod
    assert mod.ref_scale.vmap_method == "sequential" and mod.ref_add.vmap_method is None
    np.testing.assert_allclose(jax.vmap(lambda x: mod.ref_scale(x, scale=3.0))(a), 3 * a,
                               rtol=1e-6)
    mod.set_vmap_method("sequential")
    assert {f.vmap_method for f in mod} == {"sequential"}
    mod.set_vmap_method(None)


def test_a_wrong_vmap_method_is_refused_when_declared(ref_manifest):
    path, _ = ref_manifest
    mod = bekc.load(path)
    with pytest.raises(ValueError, match="did you mean 'broadcast_all'"):
        mod.ref_add.vmap_method = "broadcast"
    with pytest.raises(ValueError, match="did you mean 'ref_add'"):
        mod.set_vmap_method({"ref_ad": "sequential"})
    with pytest.raises(TypeError, match="mapping"):
        bekc.load(path, vmap_method=["sequential"])
    with pytest.raises(ValueError, match="ref_scale: vmap_method 'bogus' is not one of"):
        mod.set_vmap_method({"ref_add": "sequential", "ref_scale": "bogus"})
    assert mod.ref_add.vmap_method is None  # nothing changed


def test_idempotent_reload(ref_manifest, tmp_path, monkeypatch):
    path, prefix = ref_manifest
    mod = bekc.load(path)
    calls = []
    real = jax.ffi.register_ffi_target
    monkeypatch.setattr(jax.ffi, "register_ffi_target",
                        lambda *a, **k: (calls.append(a[0]), real(*a, **k)))
    assert bekc.load(path) is mod
    assert bekc.load(os.path.dirname(path)) is mod
    # same bytes at another path (e.g. `bekc build -o DIR`): same module, nothing registered
    other = tmp_path / "copy"
    shutil.copytree(os.path.dirname(path), other)
    assert bekc.load(str(other)) is mod
    # touching the manifest defeats the stat memo but still finds the same module
    os.utime(path, ns=(1, 1))
    assert bekc.load(path) is mod
    assert calls == []


def test_rebuild_with_same_key_is_not_a_conflict(ref_libs, tmp_path):
    """After `bekc cache clear` a rebuild may differ in bytes but has the same key."""
    prefix = unique_prefix()
    m1 = bekc.load(make_manifest(tmp_path / "a", ref_libs[1], prefix, key="k" * 64))
    m2 = bekc.load(make_manifest(tmp_path / "b", ref_libs[2], prefix, key="k" * 64))
    assert m2 is m1


def test_same_library_other_prefix(ref_libs, tmp_path):
    p1, p2 = unique_prefix(), unique_prefix()
    m1 = bekc.load(make_manifest(tmp_path / "a", ref_libs[1], p1))
    m2 = bekc.load(make_manifest(tmp_path / "b", ref_libs[1], p2))
    assert m1 is not m2
    a = rand(8)
    np.testing.assert_allclose(m2.ref_add(a, a), 2 * a)
    np.testing.assert_allclose(m1.ref_add(a, a), 2 * a)


def test_conflicting_registration(ref_libs, tmp_path):
    prefix = unique_prefix()
    p1 = make_manifest(tmp_path / "one", ref_libs[1], prefix)
    p2 = make_manifest(tmp_path / "two", ref_libs[2], prefix)
    m1 = bekc.load(p1)
    with pytest.raises(bekc.TargetConflictError) as e:
        bekc.load(p2)
    msg = str(e.value)
    assert os.path.join(str(tmp_path), "one", "libref.so") in msg
    assert os.path.join(str(tmp_path), "two", "libref.so") in msg
    assert f"{prefix}.ref_" in msg and "--target-prefix" in msg
    # the first registration still works and was not replaced
    a = rand(16)
    np.testing.assert_allclose(m1.ref_add(a, a), 2 * a)
    # and the second library loads fine under another prefix
    p3 = make_manifest(tmp_path / "three", ref_libs[2], unique_prefix())
    m3 = bekc.load(p3)
    np.testing.assert_allclose(m3.ref_add(a, a), 3 * a)  # REF_VARIANT=2: x + 2*y


def test_register_false(ref_manifest):
    path, prefix = ref_manifest
    mod = bekc.load(path, register=False)
    assert not mod.registered and "not registered" in repr(mod)
    assert f"{prefix}.ref_add" not in bekc.registered_targets()
    assert bekc.load(path) is mod and mod.registered
    assert f"{prefix}.ref_add" in bekc.registered_targets()


def test_concurrent_loads_register_once(ref_manifest, monkeypatch):
    path, _ = ref_manifest
    calls = []
    real = jax.ffi.register_ffi_target
    monkeypatch.setattr(jax.ffi, "register_ffi_target",
                        lambda *a, **k: (calls.append(a[0]), real(*a, **k)))
    results, errors = [], []
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        try:
            results.append(bekc.load(path))
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=worker) for _ in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errors and len(results) == 8 and all(r is results[0] for r in results)
    assert len(calls) == 4  # four targets, registered once each


# --------------------------------------------------------------------------- calls
def test_argument_count(ref_manifest):
    mod = bekc.load(ref_manifest[0])
    a = rand(4)
    with pytest.raises(TypeError, match=r"ref_add\(\) takes 2 input arrays.*got 1"):
        mod.ref_add(a)
    with pytest.raises(TypeError, match="got 3"):
        mod.ref_add(a, a, a)


def test_attr_errors_before_jax(ref_manifest, monkeypatch):
    mod = bekc.load(ref_manifest[0])

    def boom(*a, **k):
        raise AssertionError("jax.ffi.ffi_call must not be reached")

    monkeypatch.setattr(jax.ffi, "ffi_call", boom)
    a = rand(4)
    with pytest.raises(TypeError, match=r"ref_scale\(\).*'scal'.*did you mean 'scale'"):
        mod.ref_scale(a, scal=2.0)
    with pytest.raises(TypeError, match=r"ref_scale\(\) missing attribute 'scale'"):
        mod.ref_scale(a)
    with pytest.raises(TypeError, match=r"ref_add\(\).*'scale'"):
        mod.ref_add(a, a, scale=1.0)
    with pytest.raises(ValueError, match=r"ref_scale.*'scale'"):
        mod.ref_scale(a, scale=1e40)
    with pytest.raises(TypeError, match="ref_scale"):
        mod.ref_scale(a, scale="2")


def test_out_defaults(ref_manifest):
    mod = bekc.load(ref_manifest[0])
    a = rand(2, 5)
    r = mod.ref_add(a, a)
    assert r.shape == (2, 5) and r.dtype == jnp.float32
    # numpy float64 input: default out is canonicalized like the input itself
    x = np.ones(3)
    r = mod.ref_scale(x, scale=2.0)
    assert r.dtype == jax.dtypes.canonicalize_dtype(np.float64)
    if r.dtype == np.float32:
        np.testing.assert_allclose(r, 2 * x)
    # an explicit out
    r = mod.ref_add(a, a, out=jax.ShapeDtypeStruct((2, 5), jnp.float32))
    np.testing.assert_allclose(r, 2 * a)
    # a list gives a list
    r = mod.ref_add(a, a, out=[jax.ShapeDtypeStruct((2, 5), jnp.float32)])
    assert isinstance(r, (list, tuple)) and len(r) == 1


def test_several_outputs(ref_manifest):
    mod = bekc.load(ref_manifest[0])
    a = rand(7)
    with pytest.raises(TypeError, match=r"ref_two_out\(\) has 2 outputs"):
        mod.ref_two_out(a)
    s = jax.ShapeDtypeStruct(a.shape, a.dtype)
    with pytest.raises(TypeError, match="2 outputs"):
        mod.ref_two_out(a, out=s)
    with pytest.raises(TypeError, match="lists 3"):
        mod.ref_two_out(a, out=[s, s, s])
    p, t = mod.ref_two_out(a, out=[s, s])
    np.testing.assert_allclose(p, a + 1)
    np.testing.assert_allclose(t, a * 2)


def _decode(words):
    w = np.asarray(words).astype(np.uint64)
    return [int(w[2 * i]) | (int(w[2 * i + 1]) << 32) for i in range(13)]


def _f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def test_every_attr_type_reaches_the_handler(ref_manifest):
    mod = bekc.load(ref_manifest[0])
    x = rand(1)
    out = jax.ShapeDtypeStruct((26,), jnp.uint32)
    cases = [
        dict(b=True, i8=-128, u8=255, i16=-32768, u16=65535, i32=-2**31, u32=2**32 - 1,
             i64=-2**63, u64=2**63 - 1, f32=3.0, f64=0.1, h=1.0, bh=3.0),
        dict(b=False, i8=127, u8=0, i16=32767, u16=0, i32=2**31 - 1, u32=0,
             i64=2**63 - 1, u64=0, f32=-1.5e38, f64=-2.5, h=-65504.0, bh=-0.0),
    ]
    for attrs in cases:
        got = _decode(mod.ref_attrs(x, out=out, **attrs))
        m64 = (1 << 64) - 1
        want = [int(attrs["b"]), attrs["i8"] & m64, attrs["u8"], attrs["i16"] & m64,
                attrs["u16"], attrs["i32"] & m64, attrs["u32"], attrs["i64"] & m64,
                attrs["u64"], _f64_bits(float(np.float32(attrs["f32"]))),
                _f64_bits(attrs["f64"]),
                int(np.float16(attrs["h"]).view(np.uint16)),
                bekc._attrs.float_to_bfloat16_bits(attrs["bh"])]
        assert got == want


def test_cuda_target_on_cpu_only_jax(ref_libs, tmp_path):
    """CUDA targets register (jaxlib queues them) even without a CUDA backend."""
    if any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("a GPU backend is present")
    prefix = unique_prefix()
    mod = bekc.load(make_manifest(tmp_path / "c", ref_libs[1], prefix, platform="CUDA"))
    assert mod.registered and mod.platforms == ("CUDA",)
    assert "CUDA" in repr(mod)
    a = rand(4)
    with pytest.raises(Exception, match="No FFI handler registered"):
        jax.block_until_ready(mod.ref_add(a, a))


def test_xla_refuses_half_float_attributes(ref_manifest):
    """Why float16/bfloat16 attributes travel as uint16 bits: XLA's FFI attribute
    conversion takes only 32/64-bit float scalars (jaxlib 0.10.2). If this ever
    starts passing, F16/BF16 scalars became possible."""
    import ml_dtypes
    path, prefix = ref_manifest
    bekc.load(path)
    x = rand(1)
    attrs = dict(b=np.bool_(True), i8=np.int8(1), u8=np.uint8(1), i16=np.int16(1),
                 u16=np.uint16(1), i32=np.int32(1), u32=np.uint32(1), i64=np.int64(1),
                 u64=np.uint64(1), f32=np.float32(1), f64=np.float64(1))
    call = jax.ffi.ffi_call(f"{prefix}.ref_attrs", jax.ShapeDtypeStruct((26,), jnp.uint32))
    for h, bh in ((np.float16(1.5), np.uint16(0x4040)),
                  (np.uint16(0x3E00), ml_dtypes.bfloat16(3.0))):
        with pytest.raises(Exception, match="Unsupported float attribute bit width"):
            jax.block_until_ready(call(x, h=h, bh=bh, **attrs))


def test_capsules_match_jax_pycapsule(ref_manifest):
    import ctypes
    from bekc import _loader
    path, _ = ref_manifest
    mod = bekc.load(path, register=False)
    targets = list(mod.targets.values())
    ours = _loader._capsules(mod.library, mod.library_path, targets)
    get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))
    for t, cap in zip(targets, ours):
        theirs = jax.ffi.pycapsule(getattr(mod.library, t["symbol"]))
        assert get(cap, None) == get(theirs, None) != 0


def test_missing_symbol_is_reported(ref_libs, tmp_path):
    path = make_manifest(tmp_path / "m", ref_libs[1], unique_prefix(),
                         targets=[("ghost", "bekc_ffi_ghost", 1, 1, [])])
    with pytest.raises(bekc.LibraryLoadError, match="bekc_ffi_ghost"):
        bekc.load(path)
