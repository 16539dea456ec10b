"""The loader does not trust the manifest: what it opens, which
symbols it hands to XLA, the type of every field it reads, and the file itself.

Every library here is built by the real ``bekc`` binary; each test copies one
next to a hand-edited manifest in ``tmp_path`` (fresh name, key and target
prefix, the right ``library_sha256``), so only the property under test is
wrong. Cases that would kill, hang or exhaust the process with a trusting
loader (``abort`` as a handler, a FIFO, ``/dev/zero``) run ``bekc.load`` in a
subprocess, which must survive and report a :class:`bekc.ManifestError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import bekc
from bekc import _loader
from conftest import REPO, unique_prefix

pytestmark = pytest.mark.usefixtures("bekc_bin")

# A constructor that leaves a trace: it shows whether a library was dlopen()ed.
GOOD = r"""
#include <cstdio>
#include <cstdlib>
#include "brainevent/common.h"

namespace {
struct Trace {
    Trace() {
        if (const char* path = std::getenv("BEKC_TRUST_MARKER"))
            if (FILE* f = std::fopen(path, "w")) {
                std::fputs("constructor ran\n", f);
                std::fclose(f);
            }
    }
} trace;
}  // namespace

// Only their signatures matter here: a good manifest names these handlers.
// @BE scale_by arg ret attr.scale_factor:float32
void scale_by(const BE::Tensor, BE::Tensor, float) {}

// @BE vector_add
void vector_add(const BE::Tensor, const BE::Tensor, BE::Tensor) {}
"""

# A dependency whose handler kills the process, and a library linked against it.
DEP = r"""
#include <cstdlib>
#include "brainevent/common.h"

// @BE vector_add
void vector_add(const BE::Tensor, const BE::Tensor, BE::Tensor) { std::abort(); }
"""

MAIN = r"""
#include "brainevent/common.h"

// @BE copy
void copy(const BE::Tensor a, BE::Tensor out) {
    const float* x = static_cast<const float*>(a.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < a.numel(); ++i) o[i] = x[i];
}
"""


def _build(bekc_bin, root, source: str, stem: str, *extra) -> str:
    src = root / f"{stem}.cpp"
    src.write_text(source)
    argv = [bekc_bin, "build", str(src), f"--name={unique_prefix(stem)}",
            f"--cache-dir={bekc.get_cache_dir()}", "-o", str(root / stem), *extra]
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 0, f"{argv} failed:\n{r.stderr}"
    return r.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def libs(bekc_bin, tmp_path_factory):
    """Manifests of the three libraries: good, dep and main (linked to dep)."""
    root = tmp_path_factory.mktemp("trust-libs")
    good = _build(bekc_bin, root, GOOD, "good")
    dep = _build(bekc_bin, root, DEP, "dep")
    dep_lib = os.path.join(os.path.dirname(dep), json.load(open(dep))["library"])
    main = _build(bekc_bin, root, MAIN, "main", "--ldflag=-Wl,--no-as-needed",
                  f"--ldflag={dep_lib}", f"--ldflag=-Wl,-rpath,{os.path.dirname(dep_lib)}")
    return {"good": good, "dep": dep, "main": main, "dep_lib": dep_lib}


def _target(m: dict, function: str) -> dict:
    return next(t for t in m["targets"] if t["function"] == function)


def edit(src_manifest: str, dest, mutate=None, *, copy_library: bool = True) -> str:
    """A copy of ``src_manifest`` (and its library) in ``dest`` under a fresh name,
    key and target prefix, then ``mutate(manifest_dict)``; returns its path."""
    data = json.load(open(src_manifest))
    prefix = unique_prefix("trust")
    data["name"] = prefix
    data["key"] = hashlib.sha256(prefix.encode()).hexdigest()
    for t in data["targets"]:
        t["name"] = f"{prefix}.{t['function']}"
    dest = os.fspath(dest)
    os.makedirs(dest, exist_ok=True)
    if copy_library:
        shutil.copyfile(os.path.join(os.path.dirname(src_manifest), data["library"]),
                        os.path.join(dest, data["library"]))
    if mutate is not None:
        mutate(data)
    path = os.path.join(dest, "manifest.json")
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
    return path


# Loads argv[1] in a fresh interpreter; "call" also registers and calls
# vector_add. Exit 0 with "ManifestError:" is the only good outcome.
_LOADER = r"""
import resource, sys
path, mode, memory_limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
if memory_limit:  # a trusting loader would read /dev/zero until memory runs out
    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
import bekc
try:
    mod = bekc.load(path, register=(mode == "call"))
except bekc.ManifestError as e:
    print("ManifestError:", e, flush=True)
    sys.exit(0)
except Exception as e:
    print(f"not a ManifestError: {type(e).__name__}: {e}", flush=True)
    sys.exit(3)
print("loaded", flush=True)
if mode == "call":
    import numpy as np
    a = np.ones(4, np.float32)
    print("called:", mod.vector_add(a, a), flush=True)
sys.exit(4)
"""


def run_loader(path: str, *, call: bool = False, timeout: float = 60, env=None,
               memory_limit: int = 0) -> str:
    """Run ``bekc.load(path)`` in a subprocess; fail unless it reports a ManifestError."""
    environ = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), **(env or {}))
    argv = [sys.executable, "-c", _LOADER, path, "call" if call else "load", str(memory_limit)]
    try:
        r = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"bekc.load({path!r}) did not return within {timeout} s")
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "ManifestError:" in r.stdout, (
        f"bekc.load({path!r}) must raise ManifestError; exit status {r.returncode}:\n{out}")
    return r.stdout


# --------------------------------------------------------------------------- library
@pytest.mark.parametrize("spelling", ["absolute", "dotdot"])
def test_library_outside_the_manifest_directory_is_never_opened(libs, tmp_path, spelling):
    good_dir = os.path.dirname(libs["good"])
    lib = os.path.join(good_dir, json.load(open(libs["good"]))["library"])
    name = lib if spelling == "absolute" else os.path.relpath(lib, tmp_path / "m")
    path = edit(libs["good"], tmp_path / "m", lambda m: m.update(library=name),
                copy_library=False)
    marker = tmp_path / "constructor-ran"
    out = run_loader(path, env={"BEKC_TRUST_MARKER": str(marker)})
    assert "'library'" in out and path in out and "plain file name" in out
    assert not marker.exists(), "the library's constructor ran: it was dlopen()ed"


@pytest.mark.parametrize("name", ["./LIB", "sub/LIB", ".", "..", "LIB\0.so", "", 7, None,
                                  ["LIB"]])
def test_library_must_be_a_plain_file_name(libs, tmp_path, name):
    def mutate(m):
        lib = m["library"]
        os.makedirs(tmp_path / "m" / "sub", exist_ok=True)
        shutil.copyfile(tmp_path / "m" / lib, tmp_path / "m" / "sub" / lib)
        m["library"] = name.replace("LIB", lib) if isinstance(name, str) else name

    path = edit(libs["good"], tmp_path / "m", mutate)
    with pytest.raises(bekc.ManifestError) as e:
        bekc.load(path, register=False)
    assert "'library'" in str(e.value) and path in str(e.value)


def test_library_that_is_a_directory(libs, tmp_path):
    def mutate(m):
        os.mkdir(tmp_path / "m" / "libdir.so")
        m.update(library="libdir.so", library_sha256="0" * 64)

    path = edit(libs["good"], tmp_path / "m", mutate)
    with pytest.raises(bekc.ManifestError) as e:
        bekc.load(path, register=False)
    assert "'library'" in str(e.value) and "directory" in str(e.value)


def test_library_that_is_a_fifo_does_not_hang(libs, tmp_path):
    def mutate(m):
        os.mkfifo(tmp_path / "m" / "libfifo.so")
        m.update(library="libfifo.so", library_sha256="0" * 64)

    out = run_loader(edit(libs["good"], tmp_path / "m", mutate), timeout=30)
    assert "'library'" in out and "FIFO" in out


def test_library_symlink_in_the_manifest_directory_is_followed(libs, tmp_path):
    """The directory's owner may link the library (a runfiles tree); the manifest cannot."""
    def mutate(m):
        real = tmp_path / "m" / m["library"]
        os.replace(real, tmp_path / "elsewhere.so")
        os.symlink(tmp_path / "elsewhere.so", real)

    mod = bekc.load(edit(libs["good"], tmp_path / "m", mutate), register=False)
    assert mod.function_names == ["scale_by", "vector_add"]


# --------------------------------------------------------------------------- symbols
@pytest.mark.parametrize("symbol", ["abort", "free"])
def test_libc_symbol_as_handler_does_not_kill_the_process(libs, tmp_path, symbol):
    path = edit(libs["good"], tmp_path / "m",
                lambda m: _target(m, "vector_add").update(symbol=symbol))
    out = run_loader(path, call=True)
    assert "'targets[1].symbol'" in out and "bekc_ffi_vector_add" in out


@pytest.mark.parametrize("symbol", [
    "bekc_ffi_scale_by",            # a real handler, of another function
    "bekc_ffi_scale_by_nograph",
    "bekc_ffi_vector_addx",
    "bekc_ffi_vector_add_nograph_nograph",
    "bekc_ffi_",
    "vector_add",
    "bekc_ffi_vector_add\0",
    7, None, ["bekc_ffi_vector_add"],
])
def test_symbol_must_be_the_functions_generated_handler(libs, tmp_path, symbol):
    path = edit(libs["good"], tmp_path / "m",
                lambda m: _target(m, "vector_add").update(symbol=symbol))
    with pytest.raises(bekc.ManifestError) as e:
        bekc.load(path, register=False)
    assert "'targets[1].symbol'" in str(e.value) and path in str(e.value)


def test_both_generated_handlers_are_accepted(libs, tmp_path):
    for i, suffix in enumerate(("", "_nograph")):
        path = edit(libs["good"], tmp_path / str(i), lambda m: [
            t.update(symbol=f"bekc_ffi_{t['function']}{suffix}") for t in m["targets"]])
        mod = bekc.load(path, register=False)
        assert [t["symbol"] for t in mod.targets.values()] == [
            f"bekc_ffi_scale_by{suffix}", f"bekc_ffi_vector_add{suffix}"]


def test_symbol_found_in_a_dependency_is_refused(libs, tmp_path):
    """dlsym on the library also searches what it links: the handler must be its own."""
    def mutate(m):
        t = m["targets"][0]
        t.update(name=t["name"].rsplit(".", 1)[0] + ".vector_add", function="vector_add",
                 symbol="bekc_ffi_vector_add", arg_spec=["arg", "arg", "ret"], num_args=2)

    path = edit(libs["main"], tmp_path / "m", mutate)
    out = run_loader(path, call=True)  # a trusting loader calls dep's abort()
    assert "'targets[0].symbol'" in out and "not defined in the library" in out
    assert libs["dep_lib"] in out


def test_library_with_dependencies_loads(libs, tmp_path):
    jax = pytest.importorskip("jax")
    import numpy as np
    mod = bekc.load(edit(libs["main"], tmp_path / "m"))
    a = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(jax.block_until_ready(mod.copy(a)), a)


# --------------------------------------------------------------------------- field types
def _set(*keys_and_value):
    *keys, value = keys_and_value

    def mutate(m):
        obj = m
        for k in keys[:-1]:
            obj = obj[k]
        obj[keys[-1]] = value
    return mutate


def _drop_attrs_and_set_spec(spec):
    def mutate(m):
        del m["targets"][0]["attrs"]
        m["targets"][0]["arg_spec"] = spec
    return mutate


T0 = "targets[0]"  # scale_by: arg ret attr.scale_factor:float32
BAD_FIELDS = [
    ("schema", _set("schema", True)),
    ("schema", _set("schema", 1.0)),
    ("'name'", _set("name", 7)),
    ("'name'", _set("name", "")),
    ("'name'", _set("name", None)),
    ("'key'", _set("key", 7)),
    ("'key'", _set("key", ["k"])),
    ("'library_sha256'", _set("library_sha256", "z" * 64)),
    ("'library_sha256'", _set("library_sha256", 7)),
    ("'targets'", _set("targets", {"a": 1})),
    ("'targets'", _set("targets", "scale_by")),
    ("'targets'", _set("targets", None)),
    (f"'{T0}'", _set("targets", 0, 1)),
    (f"'{T0}'", _set("targets", 0, ["scale_by"])),
    (f"'{T0}'", _set("targets", 0, None)),
    (f"'{T0}.name'", _set("targets", 0, "name", 7)),
    (f"'{T0}.name'", _set("targets", 0, "name", "scale_by")),
    (f"'{T0}.name'", _set("targets", 0, "name", "p.vector_add")),
    (f"'{T0}.name'", _set("targets", 0, "name", "bad\nprefix.scale_by")),
    (f"'{T0}.name'", _set("targets", 0, "name", ".scale_by")),
    (f"'{T0}.function'", _set("targets", 0, "function", 7)),
    (f"'{T0}.function'", _set("targets", 0, "function", ["scale_by"])),
    (f"'{T0}.function'", _set("targets", 0, "function", "scale-by")),
    (f"'{T0}.function'", _set("targets", 0, "function", "")),
    (f"'{T0}.platform'", _set("targets", 0, "platform", "ROCm")),
    (f"'{T0}.platform'", _set("targets", 0, "platform", ["cpu"])),
    (f"'{T0}.num_args'", _set("targets", 0, "num_args", "1")),
    (f"'{T0}.num_args'", _set("targets", 0, "num_args", True)),
    (f"'{T0}.num_args'", _set("targets", 0, "num_args", 1.0)),
    (f"'{T0}.num_args'", _set("targets", 0, "num_args", -1)),
    (f"'{T0}.num_args'", _set("targets", 0, "num_args", None)),
    (f"'{T0}.num_args'", _set("targets", 0, "num_args", 2)),  # arg_spec has one 'arg'
    (f"'{T0}.num_rets'", _set("targets", 0, "num_rets", "1")),
    (f"'{T0}.num_rets'", _set("targets", 0, "num_rets", True)),
    (f"'{T0}.num_rets'", _set("targets", 0, "num_rets", [1])),
    (f"'{T0}.arg_spec'", _set("targets", 0, "arg_spec", "arg,ret")),
    (f"'{T0}.arg_spec'", _set("targets", 0, "arg_spec", None)),
    (f"'{T0}.arg_spec'", _drop_attrs_and_set_spec(7)),
    (f"'{T0}.arg_spec[0]'", _drop_attrs_and_set_spec([1, "ret"])),
    (f"'{T0}.arg_spec[0]'", _drop_attrs_and_set_spec([["arg"], "ret"])),
    (f"'{T0}.arg_spec[2]'", _set("targets", 0, "arg_spec", 2, "attr.scale_factor")),
    (f"'{T0}.arg_spec[2]'", _set("targets", 0, "arg_spec", 2, "attr.scale_factor:float128")),
    (f"'{T0}.arg_spec[2]'", _set("targets", 0, "arg_spec", 2, "bogus")),
    (f"'{T0}.attrs'", _set("targets", 0, "attrs", None)),
    (f"'{T0}.attrs'", _set("targets", 0, "attrs", {"scale_factor": "float32"})),
    (f"'{T0}.attrs'", _set("targets", 0, "attrs", [])),  # arg_spec has one attr
    (f"'{T0}.attrs[0]'", _set("targets", 0, "attrs", 0, 1)),
    (f"'{T0}.attrs[0]'", _set("targets", 0, "attrs", 0, {"name": "scale_factor"})),
    (f"'{T0}.attrs[0].name'", _set("targets", 0, "attrs", 0, "name", 7)),
    (f"'{T0}.attrs[0].name'", _set("targets", 0, "attrs", 0, "name", ["scale_factor"])),
    (f"'{T0}.attrs[0].type'", _set("targets", 0, "attrs", 0, "type", ["float32"])),
    (f"'{T0}.attrs[0].type'", _set("targets", 0, "attrs", 0, "type", "float128")),
    (f"'{T0}.attrs'", _set("targets", 0, "attrs", 0, "type", "float64")),  # vs arg_spec
]


@pytest.mark.parametrize("field,mutate", BAD_FIELDS,
                         ids=[f"{f.strip(chr(39))}-{i}" for i, (f, _) in enumerate(BAD_FIELDS)])
def test_every_field_is_checked(libs, tmp_path, field, mutate):
    path = edit(libs["good"], tmp_path / "m", mutate)
    with pytest.raises(bekc.ManifestError) as e:
        bekc.load(path, register=False)
    assert field in str(e.value) and path in str(e.value)


def test_deeply_nested_json(libs, tmp_path):
    path = edit(libs["good"], tmp_path / "m")
    depth = 200_000
    text = open(path).read().replace('"flags": {', '"flags": {"x": ' + "[" * depth + "]" * depth
                                     + ", ", 1)
    with open(path, "w") as f:
        f.write(text)
    with pytest.raises(bekc.ManifestError) as e:
        bekc.load(path, register=False)
    assert path in str(e.value) and "nested too deeply" in str(e.value)


# --------------------------------------------------------------------------- the file
def test_manifest_that_is_a_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "manifest.json"
    os.mkfifo(fifo)
    out = run_loader(str(fifo), timeout=30)
    assert "FIFO" in out and str(fifo) in out


def test_manifest_that_is_dev_zero(tmp_path):
    out = run_loader("/dev/zero", memory_limit=2 << 30)
    assert "character device" in out and "/dev/zero" in out


def test_manifest_that_is_a_directory(tmp_path):
    (tmp_path / "d" / "manifest.json").mkdir(parents=True)
    with pytest.raises(bekc.ManifestError) as e:
        bekc.load(str(tmp_path / "d"))
    assert "directory" in str(e.value)


def test_huge_manifest_is_not_read(tmp_path):
    path = tmp_path / "manifest.json"
    with open(path, "wb") as f:
        f.truncate(3 << 30)  # sparse: no disk, but a trusting read() wants 3 GiB
    out = run_loader(str(path), memory_limit=2 << 30)
    assert "16 MiB" in out and str(path) in out


def test_manifest_just_over_the_limit(libs, tmp_path):
    path = edit(libs["good"], tmp_path / "m")
    with open(path, "ab") as f:
        f.write(b" " * (_loader.MAX_MANIFEST_BYTES + 1 - os.path.getsize(path)))
    with pytest.raises(bekc.ManifestError, match="16 MiB"):
        bekc.load(path, register=False)
    with open(path, "r+b") as f:
        f.truncate(_loader.MAX_MANIFEST_BYTES)  # at the limit: read and accepted
    assert bekc.load(path, register=False).function_names == ["scale_by", "vector_add"]


# --------------------------------------------------------------------------- fast path
def test_reloading_a_loaded_manifest_skips_the_checks(libs, tmp_path, monkeypatch):
    path = edit(libs["good"], tmp_path / "m")
    mod = bekc.load(path, register=False)

    def boom(*_):
        raise AssertionError("the memoized path must not read or hash again")

    monkeypatch.setattr(_loader, "_read_manifest", boom)
    monkeypatch.setattr(_loader, "_hash_library", boom)
    monkeypatch.setattr(_loader, "_check_symbols", boom)
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        assert bekc.load(path, register=False) is mod
    per_call = (time.perf_counter() - start) / n
    assert per_call < 1e-3, f"bekc.load of a loaded manifest took {per_call * 1e6:.0f} us"


def test_an_edited_manifest_is_checked_again(libs, tmp_path):
    path = edit(libs["good"], tmp_path / "m")
    bekc.load(path, register=False)
    data = json.load(open(path))
    _target(data, "vector_add")["symbol"] = "abort"
    with open(path, "w") as f:
        json.dump(data, f, indent=2)  # another size: another stat signature
    with pytest.raises(bekc.ManifestError, match=r"'targets\[1\]\.symbol'"):
        bekc.load(path, register=False)
