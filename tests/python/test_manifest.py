"""Manifest checks: schema, fields, library hash. None of these need JAX to run."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

import bekc
from conftest import REPO, make_manifest, unique_prefix


def _fake_lib(tmp_path, data=b"not really an ELF file"):
    lib = tmp_path / "src" / "libfake.so"
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_bytes(data)
    return str(lib)


def test_import_does_not_import_jax():
    code = ("import sys; sys.path.insert(0, %r); import bekc; "
            "assert 'jax' not in sys.modules, 'bekc imported jax'" % os.path.join(REPO, "python"))
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("schema", [2, 0, "1", None])
def test_wrong_schema_is_refused(tmp_path, schema):
    path = make_manifest(tmp_path / "b", _fake_lib(tmp_path), unique_prefix(), schema=schema)
    with pytest.raises(bekc.ManifestError) as e:
        bekc.load(path)
    assert "schema" in str(e.value) and path in str(e.value)


def test_missing_schema_is_refused(tmp_path):
    path = make_manifest(tmp_path / "b", _fake_lib(tmp_path), unique_prefix())
    data = json.load(open(path))
    del data["schema"]
    json.dump(data, open(path, "w"))
    with pytest.raises(bekc.ManifestError, match="schema"):
        bekc.load(path)


def test_not_json(tmp_path):
    p = tmp_path / "manifest.json"
    p.write_text("{nope")
    with pytest.raises(bekc.ManifestError, match="not valid JSON"):
        bekc.load(str(p))


def test_directory_without_manifest(tmp_path):
    with pytest.raises(bekc.ManifestError, match="not found"):
        bekc.load(str(tmp_path))


@pytest.mark.parametrize("field", ["library", "library_sha256", "targets", "name"])
def test_missing_top_level_field(tmp_path, field):
    path = make_manifest(tmp_path / "b", _fake_lib(tmp_path), unique_prefix())
    data = json.load(open(path))
    del data[field]
    json.dump(data, open(path, "w"))
    with pytest.raises(bekc.ManifestError, match=field):
        bekc.load(path)


def test_unknown_attr_type(tmp_path):
    path = make_manifest(tmp_path / "b", _fake_lib(tmp_path), unique_prefix(),
                         targets=[("f", "bekc_ffi_f", 1, 1, [("x", "float128")])])
    with pytest.raises(bekc.ManifestError, match="float128"):
        bekc.load(path)


def test_duplicate_target(tmp_path):
    path = make_manifest(tmp_path / "b", _fake_lib(tmp_path), unique_prefix(),
                         targets=[("f", "bekc_ffi_f", 1, 1, []), ("f", "bekc_ffi_f", 1, 1, [])])
    with pytest.raises(bekc.ManifestError, match="twice"):
        bekc.load(path)


def test_library_missing(tmp_path):
    path = make_manifest(tmp_path / "b", _fake_lib(tmp_path), unique_prefix())
    os.unlink(os.path.join(tmp_path, "b", "libref.so"))
    with pytest.raises(bekc.ManifestError, match="libref.so"):
        bekc.load(path)


def test_sha256_mismatch_names_file_and_both_hashes(tmp_path):
    lib = _fake_lib(tmp_path)
    wrong = hashlib.sha256(b"something else").hexdigest()
    path = make_manifest(tmp_path / "b", lib, unique_prefix(), sha=wrong)
    actual = hashlib.sha256(open(lib, "rb").read()).hexdigest()
    with pytest.raises(bekc.LibraryHashMismatchError) as e:
        bekc.load(path)
    msg = str(e.value)
    assert os.path.join(str(tmp_path), "b", "libref.so") in msg
    assert wrong in msg and actual in msg
    assert e.value.expected == wrong and e.value.actual == actual
    assert isinstance(e.value, bekc.ManifestError)


def test_library_modified_after_first_load_is_detected(tmp_path):
    lib = _fake_lib(tmp_path)
    path = make_manifest(tmp_path / "b", lib, unique_prefix())
    with pytest.raises(bekc.LibraryLoadError):  # right hash, but not a real library
        bekc.load(path)
    with open(os.path.join(tmp_path, "b", "libref.so"), "ab") as f:
        f.write(b"tampered")
    with pytest.raises(bekc.LibraryHashMismatchError):
        bekc.load(path)


def test_unloadable_library_is_library_load_error(tmp_path):
    path = make_manifest(tmp_path / "b", _fake_lib(tmp_path), unique_prefix(), platform="CUDA")
    with pytest.raises(bekc.LibraryLoadError) as e:
        bekc.load(path)
    # dlopen's own words (not an ELF file), and no guessed cause.
    assert "libref.so" in str(e.value) and "LD_LIBRARY_PATH" not in str(e.value)


def test_undefined_symbol_is_named_demangled(tmp_path):
    """A library linked without bekc's -z defs: the hint names the symbol, in
    C++ and mangled, and blames nothing it has not checked."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    src = tmp_path / "lib.cpp"
    src.write_text("namespace BE { struct Tensor { void* p; }; }\n"
                   "void vector_add(BE::Tensor, BE::Tensor, BE::Tensor, long);\n"
                   'extern "C" void bekc_ffi_x() { vector_add({}, {}, {}, 1); }\n')
    lib = tmp_path / "libundef.so"
    subprocess.run([cxx, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    path = make_manifest(tmp_path / "b", str(lib), unique_prefix(), platform="CUDA",
                         lib_name="libundef.so")
    with pytest.raises(bekc.LibraryLoadError) as e:
        bekc.load(path)
    built = os.path.join(str(tmp_path), "b", "libundef.so")
    assert str(e.value) == (
        f"cannot load bekc library {built}: {built}: undefined symbol: "
        f"_Z10vector_addN2BE6TensorES0_S0_l. The library uses vector_add(BE::Tensor, "
        f"BE::Tensor, BE::Tensor, long) (_Z10vector_addN2BE6TensorES0_S0_l), which neither it "
        f"nor the libraries it loads define.")


@pytest.mark.parametrize("size", [0, 1, (1 << 18) - 1, 1 << 18, (1 << 18) + 1, 3 * (1 << 18) + 5])
def test_a_librarys_sha256_is_of_every_byte_whatever_its_size(tmp_path, size):
    """The loader's check of a library (sha256_fd, read in chunks into one
    buffer) hashes exactly the file's bytes: empty, one byte, around and past
    the buffer's size."""
    from bekc._manifest import sha256_fd
    data = bytes((i * 7 + 3) % 251 for i in range(size))
    path = tmp_path / "lib.so"
    path.write_bytes(data)
    # The buffer is sized from the size fstat gave; a file that grew since, or
    # a size that is wrong, still hashes whole.
    for hint in (None, size, 0, size // 3):
        fd = os.open(path, os.O_RDONLY)
        try:
            digest = sha256_fd(fd) if hint is None else sha256_fd(fd, hint)
            assert digest == hashlib.sha256(data).hexdigest(), hint
        finally:
            os.close(fd)


def test_a_missing_or_older_cuda_runtime_names_the_static_one(tmp_path):
    """A library linked with the shared CUDA runtime (docs/cli.md, "--cudart")
    that cannot get one, or gets one without a function it calls: the error
    says how to build it with the static runtime."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    stub = tmp_path / "rt" / "libcudart.so.99"
    stub.parent.mkdir()
    (tmp_path / "rt.cpp").write_text('extern "C" int cudaStubbed() { return 0; }\n')
    subprocess.run([cxx, "-shared", "-fPIC", "-Wl,-soname,libcudart.so.99", "-o", str(stub),
                    str(tmp_path / "rt.cpp")], check=True)
    src = tmp_path / "lib.cpp"
    src.write_text('extern "C" int cudaStubbed(); extern "C" int cudaNewerThanThisRuntime();\n'
                   'extern "C" void bekc_ffi_x() { cudaStubbed(); cudaNewerThanThisRuntime(); }\n')
    lib = tmp_path / "libneedsrt.so"
    subprocess.run([cxx, "-shared", "-fPIC", "-o", str(lib), str(src), str(stub),
                    f"-Wl,-rpath,{stub.parent}"], check=True)
    fix = "(`bekc build --cudart=static`, or extra_cuda_cflags=['-cudart=static'] in a loader)"
    path = make_manifest(tmp_path / "b", str(lib), unique_prefix(), platform="CUDA",
                         lib_name="libneedsrt.so")
    with pytest.raises(bekc.LibraryLoadError) as e:
        bekc.load(path)
    assert "cudaNewerThanThisRuntime" in str(e.value)
    assert ("the CUDA runtime this process loaded is older than the toolkit that built the "
            "library") in str(e.value) and fix in str(e.value)
    stub.unlink()
    path = make_manifest(tmp_path / "c", str(lib), unique_prefix(), platform="CUDA",
                         lib_name="libneedsrt.so")
    with pytest.raises(bekc.LibraryLoadError) as e:
        bekc.load(path)
    assert "libcudart.so.99" in str(e.value) and fix in str(e.value)
