"""The brainevent-compatible layer: argv construction and the load flow.

The flow tests drive a stand-in ``bekc`` (a small Python script) that logs its
argv and "builds" by copying a prepared manifest + reference library, so they
check what the layer runs, when it runs it, and what it loads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import warnings

import pytest

import bekc
from bekc import _compat
from conftest import make_manifest, unique_prefix


# --------------------------------------------------------------------------- argv builder
def test_argv_defaults(tmp_path):
    src = str(tmp_path / "k.cu")
    assert bekc.build_argv([src], name="m") == [
        "bekc", "build", src, "--json", "--name=m", "-O3"]


def test_argv_relative_inputs_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = bekc.build_argv(["k.cu"], name="m")
    assert argv[2] == str(tmp_path / "k.cu")


def test_argv_every_option(tmp_path):
    argv = bekc.build_argv(
        ["/src/k.cu"], name="my_kernels", binary="/opt/bekc",
        functions={"vector_add": ["arg", "arg", "ret", "stream"],
                   "scale_by": "arg,ret,attr.scale_factor:float32,stream"},
        extra_flags=["-lineinfo", "--expt-relaxed-constexpr"],
        extra_ldflags=["-lcublas", "-L/opt/lib"],
        extra_include_paths=["/inc/a", "rel/inc"],
        build_directory="out", verbose=True, compute_capability="8.6",
        force_rebuild=True, target_prefix="pfx", ninja_workers=4,
        optimization_level=2, use_fast_math=True, allow_cuda_graph=False,
        cache_dir="/c")
    assert argv[:3] == ["/opt/bekc", "build", "/src/k.cu"]
    rest = argv[3:]
    for want in ["--name=my_kernels", "--json", "-O2", "-v", "--target-prefix=pfx",
                 "--fast-math", "--arch=8.6", "--cuda-flag=-lineinfo",
                 "--cuda-flag=--expt-relaxed-constexpr", "--linker-arg=-lcublas",
                 "--linker-arg=-L/opt/lib", "--no-cuda-graph", "--force", "--cache-dir=/c",
                 "--function=vector_add=arg,arg,ret,stream",
                 "--function=scale_by=arg,ret,attr.scale_factor:float32,stream"]:
        assert want in rest, want
    assert "-I/inc/a" in rest and f"-I{os.path.abspath('rel/inc')}" in rest
    assert f"--output-dir={os.path.abspath('out')}" in rest
    assert "-j4" in rest
    # every value is joined to its option: none is a separate argument
    assert all(a.startswith("-") for a in rest)


def test_argv_cxx_flags():
    argv = bekc.build_argv(["/k.cpp"], name="m", flag_kind="cxx", extra_flags=["-march=native"])
    assert "--cxx-flag=-march=native" in argv and not any("cuda-flag" in a for a in argv)


def test_argv_function_list_form():
    argv = bekc.build_argv(["/k.cpp"], name="m", functions=["a", "b"])
    assert [a for a in argv if a.startswith("--function")] == ["--function=a", "--function=b"]


@pytest.mark.parametrize("cc,want", [
    ("sm_86", "sm_86"), ("86", "86"), (86, "86"), ("8.6", "8.6"), ("9.0a", "9.0a"),
    ("SM_86", "SM_86"), (["sm_80", "9.0"], "sm_80,9.0"), ("sm_80, sm_90", "sm_80,sm_90"),
    ("native", "native"), ("auto", "auto"), ("compute_90", "compute_90"), ("all", "all")])
def test_arch_spellings_pass_through(cc, want):
    """compute_capability reaches --arch as the user spelled it (bekc reads it);
    lists and comma-separated parts are joined by commas."""
    assert f"--arch={want}" in bekc.build_argv(["/k.cu"], name="m", compute_capability=cc)


@pytest.mark.parametrize("kwargs,exc", [
    (dict(optimization_level=4), ValueError), (dict(optimization_level=True), ValueError),
    (dict(ninja_workers=0), ValueError), (dict(compute_capability=True), TypeError),
    (dict(functions={}), ValueError), (dict(functions={"a,b": ["arg"]}), ValueError),
    (dict(functions={"f": ["arg", "r et"]}), ValueError), (dict(name=""), ValueError),
    (dict(extra_flags=[1]), TypeError)])
def test_argv_rejects_bad_options(kwargs, exc):
    kw = dict(name="m")
    kw.update(kwargs)
    with pytest.raises(exc):
        bekc.build_argv(["/k.cu"], **kw)


def test_cache_dir_resolution(bekc_bin, monkeypatch, tmp_path):
    monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", None)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BEKC_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert bekc.get_cache_dir() == str(tmp_path / "home" / ".cache" / "bekc")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert bekc.get_cache_dir() == str(tmp_path / "xdg" / "bekc")
    monkeypatch.setenv("BEKC_CACHE_DIR", str(tmp_path / "env"))
    assert bekc.get_cache_dir() == str(tmp_path / "env")
    bekc.set_cache_dir(tmp_path / "explicit")
    try:
        assert bekc.get_cache_dir() == str(tmp_path / "explicit")
        assert os.path.isdir(tmp_path / "explicit")
    finally:
        bekc.set_cache_dir(None)
    assert bekc.get_cache_dir() == str(tmp_path / "env")


def test_cache_dir_in_bekc_conf_is_the_loaders_cache_too(bekc_bin, monkeypatch, tmp_path):
    """``cache_dir`` in ~/.config/bekc/bekc.conf moves the cache of the Python
    loaders as it moves the binary's: get_cache_dir() names the directory
    `bekc cache path` prints, an inline load writes its source and builds its
    library there, and clear_cache() removes its sources there."""
    from support.kernels import NOOP_CPP
    home, chosen = tmp_path / "home", tmp_path / "chosen"
    conf = home / ".config" / "bekc" / "bekc.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(f"cache_dir = {chosen}\n")
    monkeypatch.setenv("HOME", str(home))
    for var in ("BEKC_CACHE_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "BEKC_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", None)
    printed = subprocess.run([bekc_bin, "cache", "path"], capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == str(chosen)
    assert bekc.get_cache_dir() == str(chosen)
    name = f"conf_{os.getpid()}"
    mod = bekc.load_cpp_inline(name, NOOP_CPP, auto_register=False)
    assert os.path.realpath(mod.path).startswith(str(chosen) + os.sep)
    sources = list((chosen / "src").glob(f"*/{name}.cpp"))
    assert len(sources) == 1
    assert not (home / ".cache").exists()
    bekc.clear_cache(name)
    assert not sources[0].exists()


def test_a_bekc_conf_with_an_error_fails_the_cache_dir_as_it_fails_the_binary(
        bekc_bin, monkeypatch, tmp_path):
    """The loaders choose no cache of their own when bekc.conf is wrong: they
    raise the binary's error, which names the file and line."""
    home = tmp_path / "home"
    conf = home / ".config" / "bekc" / "bekc.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("max_sise = 1G\n")
    monkeypatch.setenv("HOME", str(home))
    for var in ("BEKC_CACHE_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "BEKC_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", None)
    with pytest.raises(bekc.CompileError) as e:
        bekc.get_cache_dir()
    assert e.value.returncode == 2
    assert f"{conf}:1: error: unknown key 'max_sise'" in e.value.stderr
    assert str(e.value).startswith("bekc config failed (exit 2: usage error)")


# --------------------------------------------------------------------------- stand-in binary
FAKE = r'''#!{python}
import json, os, shutil, sys
if sys.argv[1:3] == ["config", "--json"]:  # the cache: the --cache-dir the loaders pass
    cache = sys.argv[3].split("=", 1)[1]
    print(json.dumps({{"cache": {{"dir": cache, "own": cache, "demoted": None,
                                  "variables": []}}}}))
    sys.exit(0)
log = os.environ.get("FAKE_BEKC_LOG")
if log:
    with open(log, "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\n")
if os.environ.get("FAKE_BEKC_STDERR"):
    sys.stderr.write(os.environ["FAKE_BEKC_STDERR"] + "\n")
code = int(os.environ.get("FAKE_BEKC_EXIT", "0"))
if code:
    sys.exit(code)
if sys.argv[1:3] == ["cache", "clear"]:
    print("removed 3 entries")
    sys.exit(0)
inputs = [a for a in sys.argv[2:] if a.startswith("/") and os.path.isfile(a)]
if not inputs:
    sys.stderr.write("error: no input file\n")
    sys.exit(1)
stash, out = os.environ["FAKE_BEKC_STASH"], os.environ["FAKE_BEKC_OUT"]
if not os.path.exists(os.path.join(out, "manifest.json")):
    shutil.copytree(stash, out, dirs_exist_ok=True)
print(json.dumps({{"manifest": os.path.join(out, "manifest.json"),
                  "library": os.path.join(out, "libref.so"), "cache_hit": True,
                  "targets": [], "timings": {{}}}}))
'''

SRC = """#include "brainevent/common.h"
// @BE ref_add
void ref_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out) {}
"""


class Fake:
    def __init__(self, tmp_path, ref_libs, monkeypatch, prefix):
        self.path = tmp_path / "fakebin" / "bekc"
        self.path.parent.mkdir()
        self.path.write_text(FAKE.format(python=sys.executable))
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR)
        self.log = tmp_path / "argv.log"
        self.stash = tmp_path / "stash"
        self.out = tmp_path / "entry"
        make_manifest(self.stash, ref_libs[1], prefix)
        self.cache = tmp_path / "cache"
        monkeypatch.setenv("BEKC", str(self.path))
        monkeypatch.setenv("FAKE_BEKC_LOG", str(self.log))
        monkeypatch.setenv("FAKE_BEKC_STASH", str(self.stash))
        monkeypatch.setenv("FAKE_BEKC_OUT", str(self.out))
        monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", None)
        bekc.set_cache_dir(self.cache)

    def calls(self):
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def fake(tmp_path, ref_libs, monkeypatch):
    pytest.importorskip("jax")
    return Fake(tmp_path, ref_libs, monkeypatch, unique_prefix("inl"))


def test_inline_flow_and_fast_second_call(fake):
    import jax.numpy as jnp
    import numpy as np
    mod = bekc.load_cpp_inline("inl_mod", SRC, optimization_level=2)
    calls = fake.calls()
    assert len(calls) == 1
    argv = calls[0]
    assert argv[0] == "build" and "--name=inl_mod" in argv and "-O2" in argv
    assert f"--cache-dir={fake.cache}" in argv and "--json" in argv
    src = argv[1]
    assert src.startswith(str(fake.cache / "src")) and src.endswith("/inl_mod.cpp")
    assert open(src).read() == SRC
    a = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_allclose(mod.ref_add(a, a), 2 * a)

    # The same call again asks bekc (whose key sees headers, libraries and
    # $CPATH, which the argv does not) and returns the module already loaded.
    again = bekc.load_cpp_inline("inl_mod", SRC, optimization_level=2)
    assert again is mod and len(fake.calls()) == 2

    # other flags: bekc runs again (its cache decides), the module is the same library
    bekc.load_cpp_inline("inl_mod", SRC, optimization_level=3)
    assert len(fake.calls()) == 3


def test_inline_call_sees_what_the_argv_does_not(fake, monkeypatch, tmp_path):
    """A static library in extra_ldflags, a response file, a header through
    $CPATH: none is in the argv, so every repeated call must ask bekc."""
    rsp = tmp_path / "flags.rsp"
    rsp.write_text("-DVAL=1")
    argv_of = lambda: fake.calls()[-1]
    bekc.load_cpp_inline("inl_mod", SRC, extra_cflags=[f"@{rsp}"],
                         extra_ldflags=[str(tmp_path / "libfoo.a")])
    first = len(fake.calls())
    rsp.write_text("-DVAL=2")
    monkeypatch.setenv("CPATH", str(tmp_path))
    bekc.load_cpp_inline("inl_mod", SRC, extra_cflags=[f"@{rsp}"],
                         extra_ldflags=[str(tmp_path / "libfoo.a")])
    assert len(fake.calls()) == first + 1, "a repeated call skipped bekc"
    assert f"--cxx-flag=@{rsp}" in argv_of()


def test_inline_cache_cleared_reruns_bekc(fake):
    mod = bekc.load_cpp_inline("inl_mod", SRC)
    assert len(fake.calls()) == 1
    import shutil
    shutil.rmtree(fake.out)  # what `bekc cache clear` does to the entry
    shutil.rmtree(fake.cache / "src")
    again = bekc.load_cpp_inline("inl_mod", SRC)
    assert len(fake.calls()) == 2
    assert os.path.isfile(fake.calls()[1][1])  # the source was written again
    assert again is mod  # same library bytes: same module, nothing re-registered


def test_source_path_is_content_addressed(fake):
    bekc.load_cpp_inline("inl_mod", SRC)
    bekc.load_cpp_inline("inl_mod", [SRC, "// another piece"])
    p1, p2 = fake.calls()[0][1], fake.calls()[1][1]
    assert p1 != p2 and os.path.dirname(os.path.dirname(p1)) == os.path.dirname(os.path.dirname(p2))
    assert open(p2).read() == SRC + "\n\n// another piece"


def test_force_rebuild_always_runs(fake):
    bekc.load_cpp_inline("inl_mod", SRC)
    bekc.load_cpp_inline("inl_mod", SRC, force_rebuild=True)
    assert len(fake.calls()) == 2 and "--force" in fake.calls()[1]


def test_auto_register_false(fake):
    mod = bekc.load_cpp_inline("inl_mod", SRC, auto_register=False)
    assert not mod.registered
    assert not any(n in bekc.registered_targets() for n in mod.targets)


def test_functions_and_cuda_options_reach_bekc(fake):
    bekc.load_cuda_inline("cu_mod", SRC, functions={"ref_add": ["arg", "arg", "ret", "stream"]},
                          extra_cuda_cflags=["-lineinfo"], compute_capability="sm_90",
                          use_fast_math=True, allow_cuda_graph=False, target_prefix="tp",
                          ninja_workers=2)
    argv = fake.calls()[0]
    assert argv[1].endswith("/cu_mod.cu")
    for want in ["--function=ref_add=arg,arg,ret,stream", "--cuda-flag=-lineinfo",
                 "--arch=sm_90", "--fast-math", "--no-cuda-graph", "--target-prefix=tp"]:
        assert want in argv


def test_compile_error_carries_diagnostics(fake, monkeypatch):
    monkeypatch.setenv("FAKE_BEKC_EXIT", "1")
    monkeypatch.setenv("FAKE_BEKC_STDERR", "inl_bad.cpp:3:14: error: 'oops' was not declared")
    with pytest.raises(bekc.CompileError) as e:
        bekc.load_cpp_inline("inl_bad", SRC)
    assert "inl_bad.cpp:3:14: error: 'oops' was not declared" in str(e.value)
    assert e.value.returncode == 1


def test_file_and_dir_loaders(fake, tmp_path):
    d = tmp_path / "kernels"
    d.mkdir()
    (d / "b.cu").write_text(SRC)
    (d / "a.cu").write_text(SRC)
    (d / "c.cpp").write_text(SRC)
    bekc.load_cuda_file(d / "a.cu")
    argv = fake.calls()[-1]
    assert argv[1] == str(d / "a.cu") and "--name=a" in argv
    bekc.load_cuda_dir(d)
    argv = fake.calls()[-1]
    assert argv[1:3] == [str(d / "a.cu"), str(d / "b.cu")] and "--name=kernels" in argv
    bekc.load_cuda_dir(d, file_patterns=["*.cu", "*.cpp"], name="mixed")
    assert str(d / "c.cpp") in fake.calls()[-1] and "--name=mixed" in fake.calls()[-1]
    bekc.load_cpp_file(d / "c.cpp", extra_cflags=["-DX=1"])
    assert "--cxx-flag=-DX=1" in fake.calls()[-1] and "--name=c" in fake.calls()[-1]
    n = len(fake.calls())
    bekc.load_cpp_file(d / "c.cpp", extra_cflags=["-DX=1"])
    assert len(fake.calls()) == n + 1  # files always ask bekc (headers may have changed)
    with pytest.raises(FileNotFoundError):
        bekc.load_cuda_dir(d, file_patterns=["*.none"])
    with pytest.raises(FileNotFoundError):
        bekc.load_cuda_file(d / "missing.cu")


def test_clear_cache(fake):
    bekc.load_cpp_inline("inl_mod", SRC)
    assert (fake.cache / "src").is_dir()
    assert bekc.clear_cache() == 3
    assert fake.calls()[-1] == ["cache", "clear", f"--cache-dir={fake.cache}"]
    assert not (fake.cache / "src").exists()
    bekc.clear_cache("inl_mod")
    assert fake.calls()[-1][:3] == ["cache", "clear", "inl_mod"]


def test_clear_cache_removes_only_bekcs_inline_sources(fake):
    """A directory used as the cache that has a src/ of its own (a project's)
    keeps it: clear_cache() removes the names bekc writes there, as
    `bekc cache clear` visits only bekc's own names."""
    own = fake.cache / "src"
    (own / "pkg").mkdir(parents=True)
    (own / "pkg" / "main.cpp").write_text("int main() {}\n")
    (own / "notes.cu").write_text("// mine\n")
    sha_like = own / ("0" * 64)  # bekc's pattern, but holding a file of another name
    sha_like.mkdir()
    (sha_like / "README").write_text("mine\n")
    outside = fake.cache.parent / "outside.cu"
    outside.write_text("// not in the cache\n")
    bekc.load_cpp_inline("inl_mod", SRC)
    written = [p for p in own.glob("*/inl_mod.cpp")]
    assert len(written) == 1
    (written[0].parent / "planted.cu").symlink_to(outside)
    bekc.clear_cache()
    assert not written[0].exists() and not written[0].parent.exists()
    assert (own / "pkg" / "main.cpp").read_text() == "int main() {}\n"
    assert (own / "notes.cu").read_text() == "// mine\n"
    assert (sha_like / "README").read_text() == "mine\n"
    assert outside.read_text() == "// not in the cache\n"


@pytest.mark.parametrize("option", ["extra_flags", "extra_include_paths"])
def test_an_empty_flag_or_include_path_is_refused_by_name(option):
    # bekc itself refuses empty values (exit 2), and abspath("") would turn an
    # empty include path into the working directory: name the list instead.
    with pytest.raises(ValueError, match=f"{option.split('_')[1]}.*'' is empty"):
        _compat.build_argv(["k.cu"], name="k", **{option: ["-DX", ""] if option == "extra_flags"
                                                  else ["inc", ""]})


ARCH_SPELLINGS = ["8.6", "86", "sm_86", "SM_86", "compute_86", " 8.6 ", "9.0a", "90a", "sm_90a",
                  "12.0", "120", "sm_100f", "8.6.", ".86", "sm_8.6", "all", "all-major", "ampere",
                  "8", "sm_", "..", "1.0", "0.0", "sm_10", "sm_1234", "8.6ab"]


@pytest.fixture
def no_nvcc(monkeypatch):
    """bekc finds no nvcc: what fails here fails before nvcc is looked for."""
    monkeypatch.setenv("BEKC_NVCC", "/nonexistent/nvcc")


CU_KERNEL = "// @BE f\nvoid f(const BE::Tensor x, BE::Tensor out, int64_t stream) {}\n"


@pytest.mark.parametrize("spelling", ARCH_SPELLINGS)
def test_arch_spellings_as_brainevent_reads_them(spelling, bekc_bin, tmp_path, no_nvcc):
    """bekc reads every spelling as brainevent's normalize_arch does: what it
    accepts is the same architecture (nvcc's -gencode in a dry run), what it
    refuses raises the same exception type, before nvcc is looked for."""
    toolchain = pytest.importorskip("brainevent._op.kernix_toolchain")
    try:
        want = toolchain.normalize_arch(spelling)
    except Exception as e:
        with pytest.raises(ValueError) as got:
            bekc.load_cuda_inline("m", CU_KERNEL, compute_capability=[spelling])
        assert type(got.value).__name__ == type(e).__name__ or (
            type(e) is ValueError and type(got.value) is ValueError), (e, got.value)
        return
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.access(nvcc, os.X_OK):
        pytest.skip("nvcc not found: the dry run of an accepted spelling needs it")
    (tmp_path / "k.cu").write_text(CU_KERNEL)
    argv = bekc.build_argv([tmp_path / "k.cu"], name="m", compute_capability=spelling,
                           binary=bekc_bin, cache_dir=str(tmp_path / "cache"))
    # The plan's one nvcc command (not nvcc's phases) names the architectures.
    env = dict(os.environ, BEKC_NVCC=nvcc, BEKC_SPLIT_NVCC="0")
    r = subprocess.run(argv + ["--dry-run"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    gencodes = sorted(set(re.findall(r"arch=compute_\w+,code=(sm_\w+)", r.stdout)))
    assert gencodes == [want], r.stdout


def test_refused_arch_raises_brainevents_exception_with_bekcs_reason(bekc_bin, no_nvcc):
    """"all" is no spelling brainevent accepts: ValueError; "1.0" is spelled
    right but names no GPU: UnsupportedArchError. Each says which value and
    why, in bekc's words."""
    with pytest.raises(ValueError) as e:
        bekc.load_cuda_inline("m", CU_KERNEL, compute_capability="all")
    assert type(e.value) is ValueError
    assert str(e.value) == (
        "compute_capability 'all': 'all' is not a GPU architecture (write sm_90, 90, 9.0 or "
        "sm_90a; or native, auto)")
    with pytest.raises(bekc.UnsupportedArchError) as e:
        bekc.load_cuda_inline("m", CU_KERNEL, compute_capability=["8.6", "1.0"])
    lines = str(e.value).splitlines()
    assert lines[:2] == ["compute_capability ['8.6', '1.0']: '1.0' (sm_10) names no GPU: no "
                         "CUDA GPU has a major version below 2", "note: did you mean sm_100?"]
    assert lines[2].startswith("note: the architectures bekc knows: sm_50, ") and len(lines) == 3
    with pytest.raises(ValueError) as e:
        bekc.load_cuda_inline("m", CU_KERNEL, compute_capability="sm86")
    assert str(e.value) == (
        "compute_capability 'sm86': 'sm86' is not a GPU architecture (write sm_90, 90, 9.0 or "
        "sm_90a; or native, auto)\nnote: did you mean sm_86?")
    # Spelled as brainevent accepts, but nvcc compiles for no such GPU: a failed build.
    with pytest.raises(bekc.CompileError, match="nvcc does not compile for 'sm_35': bekc takes "
                                                "sm_50 and newer"):
        bekc.load_cuda_inline("m", CU_KERNEL, compute_capability="sm_35")
    with pytest.raises(bekc.CompileError, match=r"'sm_75x'(.|\n)*did you mean sm_75\?"):
        bekc.load_cuda_inline("m", CU_KERNEL, compute_capability="sm_75x")



# --------------------------------------------------------------------------- where warnings point
def _line_of_next_call():
    """The line number after the caller's: where it calls a loader."""
    return sys._getframe(1).f_lineno + 1


def test_bekcs_warnings_point_at_the_line_that_called_the_loader(fake, monkeypatch, tmp_path):
    """A warning bekc prints is raised at the user's line that called the
    loader, however deep the loader's own calls go."""
    monkeypatch.setenv("FAKE_BEKC_STDERR", "bekc: warning: something to know")
    (tmp_path / "k.cpp").write_text(SRC)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "k.cu").write_text(SRC)
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line_of_next_call()
        bekc.load_cpp_inline("inl_mod", SRC)
        seen.append(line)
        line = _line_of_next_call()
        bekc.load_cpp_file(tmp_path / "k.cpp", name="inl_mod")
        seen.append(line)
        line = _line_of_next_call()
        bekc.load_cuda_dir(tmp_path / "d", name="inl_mod")
        seen.append(line)
    assert [(os.path.realpath(w.filename), w.lineno) for w in caught] == \
        [(os.path.realpath(__file__), n) for n in seen]
    assert all(str(w.message) == "bekc: warning: something to know" for w in caught)


def test_no_gpu_fallback_is_said_once_in_the_loaders_terms(bekc_bin, nvcc, monkeypatch):
    """With no GPU and no architecture asked for, a CUDA load that compiles
    warns at the caller's line and names the loader's parameter, not bekc's
    --arch; the same load again is a hit and says nothing; an architecture
    named in extra_cuda_cflags is the choice, and the manifest lists it."""
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU may be present: auto would pick it")
    monkeypatch.delenv("BRAINEVENT_COMPUTE_CAPABILITIES", raising=False)
    src = '#include "brainevent/common.h"\n' + CU_KERNEL + f"// {unique_prefix('fallback')}\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line_of_next_call()
        mod = bekc.load_cuda_inline(unique_prefix("fb"), src, auto_register=False)
    assert [(os.path.realpath(w.filename), w.lineno) for w in caught] == \
        [(os.path.realpath(__file__), line)], [str(w.message) for w in caught]
    text = str(caught[0].message)
    assert "sm_80" in text and "compute_capability=" in text and "--arch" not in text, text
    assert mod.manifest["toolchain"]["archs"] == ["sm_80"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bekc.load_cuda_inline(mod.manifest["name"], src, auto_register=False)
        named = bekc.load_cuda_inline(unique_prefix("fb86"), src, auto_register=False,
                                      extra_cuda_cflags=["-arch=sm_86"])
    assert [str(w.message) for w in caught] == []
    assert named.manifest["toolchain"]["archs"] == ["sm_86"]


def test_an_inline_sources_errors_name_the_line_that_loaded_it(fake, monkeypatch):
    """The diagnostics of an inline source name the file bekc wrote it to in
    its cache; a note then names the user's line that passed the source."""
    monkeypatch.setenv("FAKE_BEKC_EXIT", "1")
    monkeypatch.setenv("FAKE_BEKC_STDERR", "inl.cpp:3:14: error: 'oops' was not declared")
    for loader in (bekc.load_cpp_inline, bekc.load_cuda_inline):
        with pytest.raises(bekc.CompileError) as e:
            line = _line_of_next_call()
            loader("inl_bad", SRC)
        text = str(e.value)
        src = e.value.argv[2]
        assert src.startswith(str(fake.cache / "src"))
        note = (f"{__file__}:{line}: note: {loader.__name__}() was called here; its inline "
                f"source is {src}")
        assert note in text.splitlines(), text
        # bekc's diagnostics first, then the note, then the command.
        assert text.index("'oops' was not declared") < text.index(note) < text.index("command: ")


def test_an_inline_source_that_fails_to_compile_names_the_callers_line(bekc_bin):
    with pytest.raises(bekc.CompileError) as e:
        line = _line_of_next_call()
        bekc.load_cpp_inline(unique_prefix("bad"), SRC.replace("{}", "{ oops; }"))
    assert re.search(r"bad_\w+\.cpp:3:\d+: error: .oops. was not declared", str(e.value))
    assert f"{__file__}:{line}: note: load_cpp_inline() was called here" in str(e.value)
