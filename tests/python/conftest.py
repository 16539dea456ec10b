"""Fixtures for the bekc Python loader tests.

* ``ref_libs``: jaxlib's own ``xla/ffi/api/ffi.h`` handlers (data/ref_ffi.cc)
  compiled with the host compiler, two variants with different bytes. With a
  hand-written manifest they exercise load/registration/casting without the
  bekc binary.
* ``bekc_bin``: the real binary for end-to-end tests (``bekc_path`` of
  tests/conftest.py, found by tests/support/binaries.py), also set as the
  package's ``$BEKC``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

import bekc  # noqa: E402


def sha256_of(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def unique_prefix(base: str = "t") -> str:
    return f"{base}_{uuid.uuid4().hex[:10]}"


REF_TARGETS = [
    # function, symbol, num_args, num_rets, attrs. The loader accepts only the
    # symbols bekc generates (bekc_ffi_<function>), so ref_ffi.cc uses them too.
    ("ref_add", "bekc_ffi_ref_add", 2, 1, []),
    ("ref_scale", "bekc_ffi_ref_scale", 1, 1, [("scale", "float32")]),
    ("ref_two_out", "bekc_ffi_ref_two_out", 1, 2, []),
    ("ref_attrs", "bekc_ffi_ref_attrs", 1, 1, [
        ("b", "bool"), ("i8", "int8"), ("u8", "uint8"), ("i16", "int16"), ("u16", "uint16"),
        ("i32", "int32"), ("u32", "uint32"), ("i64", "int64"), ("u64", "uint64"),
        ("f32", "float32"), ("f64", "float64"), ("h", "float16"), ("bh", "bfloat16")]),
]


def make_manifest(directory, library: str, prefix: str, *, platform: str = "cpu",
                  schema=1, key=None, targets=REF_TARGETS, copy_library: bool = True,
                  sha=None, lib_name: str = "libref.so") -> str:
    """Write ``manifest.json`` (+ a copy of ``library``) into ``directory``."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    lib_dst = os.path.join(directory, lib_name)
    if copy_library:
        shutil.copyfile(library, lib_dst)
    lib_sha = sha256_of(lib_dst) if os.path.exists(lib_dst) else "0" * 64
    entries = []
    for fn, sym, nargs, nrets, attrs in targets:
        spec = ["arg"] * nargs + ["ret"] * nrets + [f"attr.{n}:{t}" for n, t in attrs]
        entries.append({
            "name": f"{prefix}.{fn}", "symbol": sym, "function": fn, "platform": platform,
            "arg_spec": spec, "num_args": nargs, "num_rets": nrets,
            "attrs": [{"name": n, "type": t} for n, t in attrs],
            "command_buffer_compatible": False, "source": "ref_ffi.cc:1",
        })
    manifest = {
        "schema": schema, "bekc_version": "0.1.0", "name": prefix,
        "key": key if key is not None else hashlib.sha256((prefix + lib_sha).encode()).hexdigest(),
        "library": lib_name,
        "library_sha256": sha if sha is not None else lib_sha,
        "toolchain": {"nvcc": None, "cxx": {"path": "c++", "version": "?"}, "archs": []},
        "flags": {}, "targets": entries,
    }
    path = os.path.join(directory, "manifest.json")
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
    return path


def _find_cxx():
    for c in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if c and shutil.which(c):
            return shutil.which(c)
    return None


@pytest.fixture(scope="session")
def ref_libs(request):
    """Paths of two compiled variants of data/ref_ffi.cc: {1: path, 2: path}.

    Kept in pytest's cache directory, keyed by the source, compiler and jaxlib
    headers, so only the first run pays for compiling ffi.h.
    """
    cxx = _find_cxx()
    if cxx is None:
        pytest.skip("no host C++ compiler to build the reference FFI library")
    import jax
    inc = jax.ffi.include_dir()
    src = os.path.join(HERE, "data", "ref_ffi.cc")
    h = hashlib.sha256()
    for part in (open(src, "rb").read(), cxx.encode(), inc.encode(),
                 open(os.path.join(inc, "xla", "ffi", "api", "ffi.h"), "rb").read()):
        h.update(part)
    out = request.config.cache.mkdir("bekc-reflib-" + h.hexdigest()[:16])
    if all((out / f"libref{v}.so").is_file() for v in (1, 2)):
        return {v: str(out / f"libref{v}.so") for v in (1, 2)}
    procs = {}
    for variant in (1, 2):
        dst = str(out / f"libref{variant}.so.tmp")
        argv = [cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-w", f"-DREF_VARIANT={variant}",
                f"-I{inc}", src, "-o", dst]
        procs[variant] = (dst, subprocess.Popen(argv, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT))
    libs = {}
    for variant, (dst, p) in procs.items():
        output = p.communicate()[0].decode(errors="replace")
        if p.returncode != 0:
            pytest.fail(f"building the reference FFI library failed:\n{output}")
        final = dst[:-len(".tmp")]
        os.replace(dst, final)
        libs[variant] = final
    return libs


@pytest.fixture
def ref_manifest(ref_libs, tmp_path):
    """A fresh manifest for variant 1 under a unique target prefix."""
    prefix = unique_prefix("ref")
    return make_manifest(tmp_path / "build", ref_libs[1], prefix), prefix


# --------------------------------------------------------------------------- real binary
@pytest.fixture(scope="session")
def bekc_bin(bekc_path, tmp_path_factory):
    """The real bekc binary (``bekc_path``, tests/support/binaries.py), made the
    one the bekc package runs ($BEKC) with a session cache directory."""
    path = str(bekc_path)
    old_env = os.environ.get("BEKC")
    os.environ["BEKC"] = path
    cache = tmp_path_factory.mktemp("bekc-cache")
    bekc.set_cache_dir(str(cache))
    yield path
    bekc.set_cache_dir(None)
    if old_env is None:
        os.environ.pop("BEKC", None)
    else:
        os.environ["BEKC"] = old_env
