"""bekc as a drop-in for brainevent 0.2.1's loaders.

* every parameter of brainevent's ``load_cuda_inline``/``load_cuda_file``/
  ``load_cuda_dir``/``load_cpp_inline``/``load_cpp_file`` exists in bekc's and
  has its effect on the ``bekc build`` command (the runner is replaced, so
  nothing is compiled) or on loading;
* ``bekc.Module`` has brainevent's ``CompiledModule`` interface (a real CPU
  build);
* ``bekc.use_for_brainevent()`` against the installed brainevent 0.2.1.

``test_extra_ldflags_reach_the_linker``, ``test_replace_keeps_brainevent_rules``
and ``test_brainevent_builds_through_bekc_on_cpu`` build through the loaders,
which pass ``--xla-include`` (and ``--linker-arg``) to bekc: they need a
binary that has those options.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
import sysconfig

import numpy as np
import pytest

jax = pytest.importorskip("jax")
brainevent = pytest.importorskip("brainevent")
import jax.numpy as jnp  # noqa: E402
from brainevent._op import kernix_pipeline  # noqa: E402

import bekc  # noqa: E402
from bekc import _brainevent, _cache_choice, _compat  # noqa: E402
from conftest import REPO, sha256_of, unique_prefix  # noqa: E402
from support.kernels import NOOP_EXPORT, SCALE_CPP  # noqa: E402

LOADERS = ("load_cuda_inline", "load_cuda_file", "load_cuda_dir", "load_cpp_inline",
           "load_cpp_file")
ORIGINALS = {n: getattr(kernix_pipeline, n) for n in LOADERS}
ARCH_ENV = "BRAINEVENT_COMPUTE_CAPABILITIES"

@pytest.fixture(autouse=True)
def _brainevent_untouched():
    """Every test starts and ends with brainevent's own loaders and no pins."""
    bekc.use_for_brainevent(False)
    brainevent.config.set_compute_capability(None)
    yield
    bekc.use_for_brainevent(False)
    brainevent.config.set_compute_capability(None)


class Recorder:
    """Stands in for the bekc run and for ``bekc.load``; records both."""

    def __init__(self):
        self.runs = []
        self.loads = []

    def argv(self, fn, *args, **kwargs):
        """Call a loader; return the ``bekc build ...`` arguments it ran."""
        n = len(self.runs)
        fn(*args, **kwargs)
        assert len(self.runs) == n + 1, "the loader did not run bekc once"
        return self.runs[-1][1:]


class FakeModule:
    library_path = "/no-such/libm.so"


@pytest.fixture
def rec(monkeypatch, tmp_path):
    r = Recorder()

    def run(argv, **kwargs):
        r.runs.append(list(argv))
        return {"manifest": str(tmp_path / "no-such" / "manifest.json")}

    def load(path, **kwargs):
        r.loads.append(kwargs)
        return FakeModule()

    monkeypatch.setattr(_compat, "run_bekc", run)
    monkeypatch.setattr(_compat, "find_binary", lambda: "/fake/bekc")
    monkeypatch.setattr(_compat, "load", load)
    monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", str(tmp_path / "cache"))
    cache = str(tmp_path / "cache")
    monkeypatch.setattr(_compat, "cache_choice",
                        lambda binary, flag: _cache_choice.CacheChoice(cache, cache, None))
    monkeypatch.delenv(ARCH_ENV, raising=False)
    return r


@pytest.fixture
def kernel_files(tmp_path):
    d = tmp_path / "kernels"
    d.mkdir()
    (d / "k.cu").write_text(NOOP_EXPORT)
    (d / "k.cpp").write_text(NOOP_EXPORT)
    return d


def opts(argv, prefix):
    return [a for a in argv if a.startswith(prefix)]


def i_dirs(argv):
    return [a[len("-I"):] for a in argv if a.startswith("-I")]


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("name", LOADERS)
def test_every_brainevent_parameter_exists(name, rec, kernel_files):
    """Same positional parameters, and every keyword with brainevent's default;
    the file/dir loaders forward brainevent's inline keywords."""
    theirs = inspect.signature(ORIGINALS[name]).parameters
    ours = inspect.signature(getattr(bekc, name)).parameters
    positional = [p.name for p in theirs.values()
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in ours.values()][:len(positional)] == positional
    for p in theirs.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        assert p.name in ours, f"bekc.{name} has no parameter {p.name!r}"
        assert ours[p.name].kind is p.kind, p.name
        assert ours[p.name].default == p.default, p.name
    inline = "load_cuda_inline" if "cuda" in name else "load_cpp_inline"
    forwarded = {p.name: p.default for p in inspect.signature(ORIGINALS[inline]).parameters
                 .values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    if name.endswith("_file"):
        getattr(bekc, name)(kernel_files / ("k.cu" if "cuda" in name else "k.cpp"), **forwarded)
    elif name.endswith("_dir"):
        bekc.load_cuda_dir(kernel_files, **forwarded)
    else:
        getattr(bekc, name)("m", NOOP_EXPORT, **forwarded)
    assert len(rec.runs) == 1
    assert "replace" in inspect.signature(bekc.load).parameters


CUDA_ARGV_CASES = [
    # (brainevent keyword arguments, argv items that must be there, prefixes that must not)
    (dict(extra_cuda_cflags=["-lineinfo", "-Xptxas", "-v"]),
     ["--cuda-flag=-lineinfo", "--cuda-flag=-Xptxas", "--cuda-flag=-v"], []),
    (dict(force_rebuild=True), ["--force"], []),
    (dict(verbose=True), ["-v"], []),
    (dict(optimization_level=1), ["-O1"], ["-O3"]),
    (dict(use_fast_math=True), ["--fast-math"], []),
    (dict(allow_cuda_graph=False), ["--no-cuda-graph"], []),
    (dict(target_prefix="tp"), ["--target-prefix=tp"], []),
    # brainevent: `target_prefix or name`
    (dict(target_prefix=""), ["--name=m"], ["--target-prefix"]),
    (dict(compute_capability="compute_86"), ["--arch=compute_86"], []),
    (dict(extra_ldflags=["-lcublas"]), ["--linker-arg=-lcublas"], ["--ldflag"]),
]


@pytest.mark.parametrize("kwargs,want,absent", CUDA_ARGV_CASES,
                         ids=[next(iter(c[0])) + "=" + repr(next(iter(c[0].values())))
                              for c in CUDA_ARGV_CASES])
def test_cuda_parameter_effect_through_brainevent(kwargs, want, absent, rec):
    """Each parameter, passed the brainevent way, reaches bekc as brainevent means it."""
    bekc.use_for_brainevent()
    argv = rec.argv(brainevent.load_cuda_inline, "m", NOOP_EXPORT, **kwargs)
    for w in want:
        assert w in argv, (w, argv)
    for a in absent:
        assert not opts(argv, a), (a, argv)


def test_build_directory_and_auto_register_and_replace(rec, tmp_path, monkeypatch):
    bekc.use_for_brainevent()
    monkeypatch.chdir(tmp_path)
    argv = rec.argv(brainevent.load_cuda_inline, "m", NOOP_EXPORT, build_directory="out",
                    auto_register=False)
    assert f"--output-dir={tmp_path / 'out'}" in argv
    assert rec.loads[-1] == {"register": False, "replace": False}
    rec.argv(brainevent.load_cpp_inline, "m", NOOP_EXPORT, replace=True)
    assert rec.loads[-1] == {"register": True, "replace": True}
    # brainevent: force_rebuild registers as replace does
    rec.argv(brainevent.load_cpp_inline, "m", NOOP_EXPORT, force_rebuild=True)
    assert rec.loads[-1]["replace"] is True
    (tmp_path / "k.cu").write_text(NOOP_EXPORT)
    rec.argv(brainevent.load_cuda_file, tmp_path / "k.cu", replace=True, auto_register=False)
    assert rec.loads[-1] == {"register": False, "replace": True}


def test_extra_ldflags_mapping(rec, kernel_files):
    """CUDA: each entry is one linker argument (brainevent's ``-Xlinker E``), so
    ``--linker-arg=E``; C++: each entry goes to the compiler driver (``--ldflag=E``)."""
    entries = ["/opt/nvidia/cublas/lib/libcublas.so.13", "-rpath=/opt/nvidia/cublas lib",
               "-L/path with spaces"]
    want = [f"--linker-arg={e}" for e in entries]
    for argv in (rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT, extra_ldflags=entries),
                 rec.argv(bekc.load_cuda_file, kernel_files / "k.cu", extra_ldflags=entries),
                 rec.argv(bekc.load_cuda_dir, kernel_files, extra_ldflags=entries)):
        assert opts(argv, "--linker-arg") == want and not opts(argv, "--ldflag")
    entries = ["-Wl,-rpath,/opt/lib", "-lm"]
    for argv in (rec.argv(bekc.load_cpp_inline, "m", NOOP_EXPORT, extra_ldflags=entries),
                 rec.argv(bekc.load_cpp_file, kernel_files / "k.cpp", extra_ldflags=entries)):
        assert opts(argv, "--ldflag") == [f"--ldflag={e}" for e in entries]
        assert not opts(argv, "--linker-arg")


def _runpath(library):
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf not found")
    out = subprocess.run([readelf, "-d", library], capture_output=True, text=True).stdout
    return re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", out)


def test_extra_ldflags_reach_the_linker(bekc_bin, request):
    """Real builds: the C++ entry goes to the driver, the CUDA one to the linker."""
    name = unique_prefix("ld_cpp")
    mod = bekc.load_cpp_inline(name, SCALE_CPP, extra_ldflags=["-Wl,-rpath,/opt/bekc_cpp_rp"])
    assert _runpath(mod.path) == ["/opt/bekc_cpp_rp"]
    request.getfixturevalue("nvcc")  # the CUDA half needs nvcc (no GPU): skipped without
    src = '#include "brainevent/common.h"\n' + NOOP_EXPORT.replace("out)", "out, int64_t stream)")
    cmod = bekc.load_cuda_inline(unique_prefix("ld_cu"), src, compute_capability="8.0",
                                 extra_ldflags=["-rpath=/opt/bekc_cuda_rp"], auto_register=False)
    # The user's RUNPATH comes first; the toolkit's CUDA runtime directory follows.
    assert _runpath(cmod.path)[0].split(":")[0] == "/opt/bekc_cuda_rp"


def test_extra_cuda_cflags_choose_the_cuda_runtime(bekc_bin, request):
    """brainevent hands extra_cuda_cflags to the nvcc that links, so nvcc's
    -cudart there chooses the runtime, as `bekc build --cudart` does."""
    request.getfixturevalue("nvcc")
    src = '#include "brainevent/common.h"\n' + NOOP_EXPORT.replace("out)", "out, int64_t stream)")
    shared = bekc.load_cuda_inline(unique_prefix("rt_shared"), src, compute_capability="8.0",
                                   auto_register=False)
    static = bekc.load_cuda_inline(unique_prefix("rt_static"), src, compute_capability="8.0",
                                   extra_cuda_cflags=["-cudart=static"], auto_register=False)
    assert shared.manifest["toolchain"]["cudart"] == "shared"
    assert static.manifest["toolchain"]["cudart"] == "static"
    assert static.manifest["flags"]["cuda_flags"] == []
    assert os.path.getsize(static.path) > 4 * os.path.getsize(shared.path)


def test_a_loaders_interpreter_facts_are_found_once_per_sys_path(rec, monkeypatch):
    """jaxlib's headers and the nvidia site-packages are looked for on a
    process's first load, not on each; brainevent's include directory, which
    only brainevent's own builds use, is not looked for by a plain load."""
    real = importlib.util.find_spec
    looked = []
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: looked.append(n) or real(n, *a))
    first = rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT)
    looked.clear()
    again = rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT)
    assert again == first
    found = [n for n in ("jaxlib", "nvidia") if real(n) is not None]
    assert not set(found) & set(looked), looked
    monkeypatch.syspath_prepend(os.path.dirname(os.path.abspath(__file__)))
    rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT)
    assert set(found) <= set(looked)  # sys.path changed: looked for again
    assert "brainevent" not in looked


def test_unmappable_ldflags_raise_before_bekc_runs(rec):
    cases = [("load_cuda_inline", 3, TypeError), ("load_cpp_inline", 3, TypeError),
             ("load_cuda_inline", b"-lm", TypeError), ("load_cuda_inline", "", ValueError),
             ("load_cpp_inline", "", ValueError), ("load_cuda_inline", "-lm\0x", ValueError),
             ("load_cpp_inline", "-lm\0x", ValueError), ("load_cuda_inline", "-lm\n-lx", ValueError),
             ("load_cpp_inline", "-lm\n-lx", ValueError),
             ("load_cuda_inline", "-Wl,-rpath,/x", ValueError)]
    for loader, entry, exc in cases:
        with pytest.raises(exc, match=re.escape(repr(entry))):
            getattr(bekc, loader)("m", NOOP_EXPORT, extra_ldflags=["-lok", entry])
    assert rec.runs == []


def test_compute_capability_spellings(rec):
    """compute_capability reaches bekc as spelled (bekc reads brainevent's
    spellings: tests/python/test_loaders_argv_and_flow.py); lists and comma-separated parts
    are joined by commas."""
    for cc, want in [("8.6", "8.6"), ("sm_86", "sm_86"), ("SM_86", "SM_86"), (86, "86"),
                     ("compute_86", "compute_86"), ("9.0a", "9.0a"), ("12.0", "12.0"),
                     (["8.0", "sm_90", "8.0"], "8.0,sm_90,8.0"), ("8.0, 9.0", "8.0,9.0"),
                     (["8.0,8.6", "9.0"], "8.0,8.6,9.0")]:
        argv = rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT, compute_capability=cc)
        assert opts(argv, "--arch") == [f"--arch={want}"], cc
    # brainevent: an empty choice is no choice
    for empty in ("", [], " , "):
        assert not opts(rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT, compute_capability=empty),
                        "--arch")


def test_refused_compute_capability_raises_valueerror_naming_it(bekc_bin, monkeypatch):
    """What brainevent refuses, bekc refuses with a ValueError naming the value
    (brainevent's exception types: tests/python/test_loaders_argv_and_flow.py), before nvcc
    is looked for, also when it comes from $BRAINEVENT_COMPUTE_CAPABILITIES."""
    monkeypatch.setenv("BEKC_NVCC", "/nonexistent/nvcc")
    monkeypatch.delenv(ARCH_ENV, raising=False)
    for bad in ("1.0", "sm_10", "8", "ampere", "sm_86x1"):
        with pytest.raises(ValueError, match=re.escape(repr(bad))):
            bekc.load_cuda_inline("m", NOOP_EXPORT, compute_capability=bad)
    monkeypatch.setenv(ARCH_ENV, "ampere")
    with pytest.raises(ValueError, match=ARCH_ENV):
        bekc.load_cuda_inline("m", NOOP_EXPORT)


def test_compute_capability_pins(rec, monkeypatch, kernel_files):
    cuda_calls = [lambda **kw: rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT, **kw),
                  lambda **kw: rec.argv(bekc.load_cuda_file, kernel_files / "k.cu", **kw),
                  lambda **kw: rec.argv(bekc.load_cuda_dir, kernel_files, **kw)]
    for call in cuda_calls:
        assert not opts(call(), "--arch")
    monkeypatch.setenv(ARCH_ENV, "8.6, 9.0")
    for call in cuda_calls:
        assert opts(call(), "--arch") == ["--arch=8.6,9.0"]
    brainevent.config.set_compute_capability(["8.0", "8.9"])  # the config pin beats the env
    for call in cuda_calls:
        assert opts(call(), "--arch") == ["--arch=sm_80,sm_89"]
        assert opts(call(compute_capability="7.5"), "--arch") == ["--arch=7.5"]
    # C++ builds have no architecture
    assert not opts(rec.argv(bekc.load_cpp_inline, "m", NOOP_EXPORT), "--arch")
    assert not opts(rec.argv(bekc.load_cpp_file, kernel_files / "k.cpp"), "--arch")
    brainevent.config.set_compute_capability(None)


def _real_dir(*parts):
    return os.path.realpath(os.path.join(*parts))


def test_loaders_compile_with_bekcs_headers_and_brainevent_routes_with_its_own(
        rec, kernel_files, tmp_path, monkeypatch):
    """A bekc loader call compiles with the headers `bekc build` uses for the
    same source: the user's directories, then bekc's own runtime headers,
    whether or not brainevent is installed and whether or not
    use_for_brainevent() is on. brainevent's own include directory comes in
    (after the user's) only for the builds brainevent asks for through the
    loaders use_for_brainevent() put in its modules. XLA's FFI headers are
    named for every load."""
    be_inc = _real_dir(os.path.dirname(importlib.util.find_spec("brainevent").origin), "include")
    xla_inc = _real_dir(jax.ffi.include_dir())
    user = tmp_path / "user_inc"
    user.mkdir()

    def calls(ns):
        return [lambda: rec.argv(ns.load_cuda_inline, "m", NOOP_EXPORT, extra_include_paths=[user]),
                lambda: rec.argv(ns.load_cpp_inline, "m", NOOP_EXPORT, extra_include_paths=[user]),
                lambda: rec.argv(ns.load_cuda_file, kernel_files / "k.cu",
                                 extra_include_paths=[user]),
                lambda: rec.argv(ns.load_cuda_dir, kernel_files, extra_include_paths=[user]),
                lambda: rec.argv(ns.load_cpp_file, kernel_files / "k.cpp",
                                 extra_include_paths=[user])]

    for call in calls(bekc):
        argv = call()
        assert i_dirs(argv) == [str(user)]
        assert opts(argv, "--xla-include") == [f"--xla-include={xla_inc}"]
    bekc.use_for_brainevent()
    for call in calls(bekc):  # bekc's own loaders stay bekc's while brainevent is routed
        assert i_dirs(call()) == [str(user)]
    for call in calls(brainevent._op):  # brainevent's builds: its headers, after the user's
        argv = call()
        assert i_dirs(argv) == [str(user), be_inc]
        assert opts(argv, "--xla-include") == [f"--xla-include={xla_inc}"]
    bekc.use_for_brainevent(False)
    # found without importing: with brainevent and jaxlib not findable, neither is added
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n in ("brainevent", "jaxlib") else real(n, *a))
    for call in calls(bekc):
        argv = call()
        assert i_dirs(argv) == [str(user)] and not opts(argv, "--xla-include")


def test_quickstart_source_loads_from_python_as_it_builds_from_the_cli(bekc_bin, tmp_path):
    """With brainevent installed, load_cpp_file compiles the quickstart's CPU
    kernels against bekc's headers, as `bekc build` does (BE_CHECK streams a
    BE::DType, which brainevent 0.2.1's headers cannot)."""
    src = os.path.join(REPO, "examples", "quickstart", "cpu_kernels.cpp")
    cli = subprocess.run([bekc_bin, "build", src, "--json", "--name", "quickstart_cli",
                          f"--cache-dir={tmp_path / 'cli_cache'}"],
                         capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stderr
    mod = bekc.load_cpp_file(src, name=unique_prefix("quickstart_py"))
    assert mod.manifest["flags"]["include_dirs"] == \
        json.load(open(json.loads(cli.stdout)["manifest"]))["flags"]["include_dirs"] == []
    x = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_allclose(mod.vector_add(x, x), 2 * x)
    i = x.astype(jnp.int32)
    with pytest.raises(Exception, match=r"vector_add takes float32, got int32 \+ int32"):
        mod.vector_add(i, i)


def test_verbose_says_when_brainevents_headers_come_first(bekc_bin, tmp_path, capfd):
    """Only use_for_brainevent's routed builds use brainevent's headers, and
    -v (verbose=True) says so; a plain bekc load says nothing of it."""
    src = '#include "brainevent/common.h"\n' + NOOP_EXPORT
    bekc.load_cpp_inline(unique_prefix("plain_v"), src, verbose=True, auto_register=False)
    assert "brainevent's own headers" not in capfd.readouterr().err
    bekc.use_for_brainevent()
    brainevent._op.load_cpp_inline(unique_prefix("routed_v"), src, verbose=True,
                                   auto_register=False)
    err = capfd.readouterr().err
    be_inc = _real_dir(os.path.dirname(importlib.util.find_spec("brainevent").origin), "include")
    assert f"brainevent's own headers ({be_inc}" in err, err


def test_cuda_loaders_name_this_interpreters_toolkit(rec, kernel_files, tmp_path, monkeypatch):
    """bekc looks for a pip CUDA toolkit where this interpreter would import
    ``nvidia`` from (docs/cli.md, "Which nvcc"), and every load names this
    interpreter's site-packages for its installed packs."""
    purelib = sysconfig.get_paths()["purelib"]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == "nvidia" else real(n, *a))
    want = sorted({f"--python-site={purelib}", f"--python-site={sysconfig.get_paths()['platlib']}"})
    assert sorted(opts(rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT), "--python-site")) == want
    assert sorted(opts(rec.argv(bekc.load_cuda_file, kernel_files / "k.cu"), "--python-site")) == want
    # C++ builds need no nvcc, but every load names the site-packages, whose
    # bekc_packs/ hold the installed packs (docs/cache.md, "Installed packs").
    assert sorted(opts(rec.argv(bekc.load_cpp_inline, "m", NOOP_EXPORT), "--python-site")) == want
    # With the nvidia namespace package importable (the wheels' layout), its
    # directories: every one that holds it, as brainevent's find_spec sees them.
    for site in ("a", "b"):
        (tmp_path / site / "nvidia" / "cu13" / "bin").mkdir(parents=True)
    monkeypatch.setattr(importlib.util, "find_spec", real)
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    importlib.invalidate_caches()
    argv = rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT)
    assert opts(argv, "--python-site")[:2] == [f"--python-site={tmp_path / 'a'}",
                                                f"--python-site={tmp_path / 'b'}"]
    # What a build found is kept for the next (docs/migrating.md), until sys.path changes.
    (tmp_path / "c" / "nvidia").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path / "c"))
    argv = rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT)
    assert opts(argv, "--python-site")[:3] == [f"--python-site={tmp_path / s}" for s in "cab"]
    # Not routing brainevent: none of brainevent's nvcc settings.
    monkeypatch.setenv("BRAINEVENT_NVCC_PATH", "/opt/nvcc")
    argv = rec.argv(bekc.load_cuda_inline, "m", NOOP_EXPORT)
    assert not opts(argv, "--brainevent-nvcc") and not opts(argv, "--nvcc-prefer")


def test_routing_brainevent_passes_its_nvcc_choice(rec, tmp_path, monkeypatch):
    from brainevent._op import kernix_toolchain
    monkeypatch.delenv("BRAINEVENT_NVCC_PATH", raising=False)
    monkeypatch.delenv("BRAINEVENT_NVCC_PREFER", raising=False)
    monkeypatch.setattr(kernix_toolchain, "_NVCC_DISCOVERY", None)
    bekc.use_for_brainevent()
    argv = rec.argv(brainevent.load_cuda_inline, name="m", cuda_sources=NOOP_EXPORT)
    assert opts(argv, "--nvcc-prefer") == ["--nvcc-prefer=pip"]  # brainevent's default
    assert not opts(argv, "--brainevent-nvcc")
    monkeypatch.setenv("BRAINEVENT_NVCC_PREFER", "system")
    argv = rec.argv(brainevent.load_cuda_inline, name="m", cuda_sources=NOOP_EXPORT)
    assert opts(argv, "--nvcc-prefer") == ["--nvcc-prefer=system"]
    brainevent.config.prefer_system_nvcc(False)  # set_nvcc_discovery wins over the variable
    monkeypatch.setenv("BRAINEVENT_NVCC_PATH", str(tmp_path / "nvcc"))
    argv = rec.argv(brainevent.load_cuda_inline, name="m", cuda_sources=NOOP_EXPORT)
    assert opts(argv, "--nvcc-prefer") == ["--nvcc-prefer=pip"]
    assert opts(argv, "--brainevent-nvcc") == [f"--brainevent-nvcc={tmp_path / 'nvcc'}"]
    # C++ builds: no nvcc at all.
    assert not opts(rec.argv(brainevent.load_cpp_inline, name="m", cpp_sources=NOOP_EXPORT), "--nvcc")


def test_file_inputs_are_real_paths(rec, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text(NOOP_EXPORT)
    (src / "k.cpp").write_text(NOOP_EXPORT)
    (tmp_path / "alias").symlink_to(src)
    (src / "other.cu").symlink_to(src / "k.cu")
    real_cu = os.path.realpath(src / "k.cu")
    spellings = [src / "k.cu", tmp_path / "alias" / "k.cu", str(src / ".." / "alias" / "k.cu")]
    inputs = {rec.argv(bekc.load_cuda_file, p)[1] for p in spellings}
    assert inputs == {real_cu}
    # the module name still comes from the name as written (brainevent: the stem)
    assert "--name=other" in rec.argv(bekc.load_cuda_file, src / "other.cu")
    assert rec.argv(bekc.load_cpp_file, tmp_path / "alias" / "k.cpp")[1] == \
        os.path.realpath(src / "k.cpp")
    argv = rec.argv(bekc.load_cuda_dir, tmp_path / "alias")
    assert argv[1] == real_cu and "--name=alias" in argv
    assert argv.count(real_cu) == 1  # other.cu is the same file


def test_load_cuda_dir_patterns_are_pathlib_globs(rec, tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.cu").write_text(NOOP_EXPORT)
    (tmp_path / "d" / "sub" / "b.cu").write_text(NOOP_EXPORT)
    argv = rec.argv(bekc.load_cuda_dir, tmp_path / "d", file_patterns=["**/*.cu"])
    assert argv[1:3] == [str(tmp_path / "d" / "a.cu"), str(tmp_path / "d" / "sub" / "b.cu")]


# --------------------------------------------------------------------------- the module
MODULE_SRC = SCALE_CPP + r"""
// @BE path arg ret
void path(const BE::Tensor x, BE::Tensor out) {
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + 1.0f;
}
"""


@pytest.fixture
def built_module(bekc_bin, tmp_path):
    """A real CPU build by the binary itself (no loader options involved)."""
    name = unique_prefix("api")
    src = tmp_path / f"{name}.cpp"
    src.write_text(MODULE_SRC)
    out = subprocess.run([bekc_bin, "build", str(src), f"--name={name}", "--json",
                          f"--cache-dir={bekc.get_cache_dir()}"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return bekc.load(json.loads(out.stdout)["manifest"]), name


def test_module_has_compiled_module_interface(built_module):
    mod, name = built_module
    assert os.path.isfile(mod.path) and mod.path == mod.library_path
    assert mod.content_hash == "sha256:" + sha256_of(mod.path)[:16]
    assert mod.function_names == ["scale", "path"]
    r = repr(mod)
    assert repr(mod.path) in r and "['scale', 'path']" in r
    with pytest.raises(KeyError, match=r"nope.*\['scale', 'path'\]"):
        mod.get_handler("nope")

    h = mod.get_handler("scale")
    assert isinstance(h, ctypes._CFuncPtr) and callable(h) and mod.get_handler("scale") is h
    symbol = mod.functions["scale"].info["symbol"]
    expected = ctypes.cast(ctypes.CDLL(mod.path)[symbol], ctypes.c_void_p).value
    assert ctypes.cast(h, ctypes.c_void_p).value == expected
    # it is the handler: registered under another name, it computes
    jax.ffi.register_ffi_target(f"{name}.alias", jax.ffi.pycapsule(h), platform="cpu")
    x = jnp.arange(4, dtype=jnp.float32)
    y = jax.ffi.ffi_call(f"{name}.alias", jax.ShapeDtypeStruct(x.shape, x.dtype))(
        x, factor=np.float32(3.0))
    np.testing.assert_allclose(y, 3 * x)


def test_attributes_win_over_kernels_of_the_same_name(built_module):
    mod, name = built_module
    assert isinstance(mod.path, str) and mod.path.endswith(f"lib{name}.so")
    kernel = mod["path"]
    assert isinstance(kernel, bekc.KernelFunction) and kernel.target == f"{name}.path"
    x = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_allclose(kernel(x), x + 1)
    assert mod.get_handler("path") is not None


def test_replace_keeps_brainevent_rules(bekc_bin):
    """replace=True: the same library again is a no-op; a changed one cannot be
    swapped in (XLA keeps the first handler), so it raises, as brainevent does."""
    name = unique_prefix("repl")
    mod = bekc.load_cpp_inline(name, SCALE_CPP)
    assert bekc.load_cpp_inline(name, SCALE_CPP, replace=True) is mod
    assert bekc.load_cpp_inline(name, SCALE_CPP, force_rebuild=True, replace=True) is mod
    changed = SCALE_CPP.replace("in[i] * factor", "in[i] * factor * 2.0f")
    with pytest.raises(bekc.TargetConflictError, match="cannot replace FFI target") as e:
        bekc.load_cpp_inline(name, changed, replace=True)
    assert "XLA cannot re-point" in str(e.value) and "target_prefix" in str(e.value)
    with pytest.raises(bekc.TargetConflictError) as e:  # the same refusal without replace
        bekc.load_cpp_inline(name, changed)
    assert "cannot replace FFI target" not in str(e.value)
    x = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_allclose(mod.scale(x, factor=2.0), 2 * x)  # the first one still serves
    other = bekc.load_cpp_inline(name, changed, target_prefix=name + "_v2")
    np.testing.assert_allclose(other.scale(x, factor=2.0), 4 * x)


# --------------------------------------------------------------------------- use_for_brainevent
def _holders(values):
    ids = {id(v) for v in values}
    return sorted((n, a) for n, m in list(sys.modules.items())
                  if m is not None and (n == "brainevent" or n.startswith("brainevent."))
                  for a, v in list(vars(m).items()) if id(v) in ids)


def test_use_for_brainevent_replaces_every_reference():
    import brainevent._dense.binary as dense  # imported before the call
    before = _holders(ORIGINALS.values())
    assert ("brainevent._dense.binary", "load_cuda_file") in before
    report = bekc.use_for_brainevent()
    assert report.enabled and (report.version, report.check) == ("0.2.1", "tested")
    assert report.replaced == len(before) and set(before) <= set(report.references)
    assert _holders(ORIGINALS.values()) == []
    # Each module holds bekc's loader, marked as brainevent's (one function per name).
    for name in LOADERS:
        routed = getattr(brainevent._op, name)
        assert routed.__wrapped__ is getattr(bekc, name), name
        for module in (brainevent, kernix_pipeline):
            assert getattr(module, name) is routed, (module.__name__, name)
    assert dense.load_cuda_file is brainevent._op.load_cuda_file
    # a later `from brainevent._op import ...` gets bekc's
    ns = {}
    exec("from brainevent._op import load_cuda_file, load_cpp_inline", ns)
    assert ns["load_cuda_file"].__wrapped__ is bekc.load_cuda_file
    assert ns["load_cpp_inline"].__wrapped__ is bekc.load_cpp_inline
    # the submodules that name a loader are found from the source, tests excluded
    found = _brainevent._modules_naming_loaders(brainevent)
    assert {"brainevent._dense.binary", "brainevent._op", "brainevent._op.kernix_pipeline",
            "brainevent._misc"} <= set(found)
    assert not [m for m in found if m.endswith("_test")]


def test_use_for_brainevent_is_idempotent_and_undoable():
    first = bekc.use_for_brainevent()
    again = bekc.use_for_brainevent()
    assert again.replaced == 0 and again.references == first.references
    undone = again.undo()
    assert not undone.enabled and undone.restored == first.replaced
    for name in LOADERS:
        assert getattr(brainevent, name) is ORIGINALS[name]
        assert getattr(brainevent._op, name) is ORIGINALS[name]
    assert len(_holders(ORIGINALS.values())) == first.replaced
    assert _holders([_brainevent._routed_loader(n) for n in LOADERS]) == []
    assert bekc.use_for_brainevent(False).restored == 0
    assert bekc.use_for_brainevent().replaced == first.replaced


def test_use_for_brainevent_checks_the_loaders_not_the_version(monkeypatch):
    """An untested version string with brainevent's loaders is accepted with a
    warning; listing it in the public bekc.SUPPORTED_BRAINEVENT_VERSIONS
    silences the warning (a rebinding of the package's name takes effect)."""
    monkeypatch.setattr(brainevent, "__version__", "9.9.9")
    with pytest.warns(bekc.UntestedBrainEventWarning) as caught:
        report = bekc.use_for_brainevent()
    assert (report.version, report.check) == ("9.9.9", "parameters")
    assert len(caught) == 1 and "(0.2.1, 0.3.0)" in str(caught[0].message)
    assert brainevent.load_cuda_file.__wrapped__ is bekc.load_cuda_file
    bekc.use_for_brainevent(False)
    monkeypatch.setattr(bekc, "SUPPORTED_BRAINEVENT_VERSIONS",
                        bekc.SUPPORTED_BRAINEVENT_VERSIONS | {"9.9.9"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bekc.use_for_brainevent().check == "listed"


@pytest.mark.parametrize("how", ["sys.modules", "find_spec"])
def test_use_for_brainevent_without_brainevent(how, monkeypatch):
    if how == "sys.modules":
        monkeypatch.setitem(sys.modules, "brainevent", None)
    else:
        real = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda n, *a: None if n == "brainevent" else real(n, *a))
    with pytest.raises(bekc.BrainEventNotInstalledError) as e:
        bekc.use_for_brainevent()
    assert isinstance(e.value, ImportError) and isinstance(e.value, bekc.BekcError)
    assert "pip install brainevent==0.3.0 (tested: 0.2.1, 0.3.0)" in str(e.value)


def test_use_for_brainevent_in_a_fresh_process():
    """Importing bekc imports neither brainevent nor JAX; the call imports
    brainevent and its loader-holding submodules and leaves no original behind."""
    code = f"""
import json, sys
sys.path.insert(0, {os.path.join(REPO, "python")!r})
import bekc
assert "brainevent" not in sys.modules and "jax" not in sys.modules
report = bekc.use_for_brainevent()
from brainevent._op import kernix_pipeline as kp
left = [(n, a) for n, m in list(sys.modules.items()) if m is not None and
        (n == "brainevent" or n.startswith("brainevent.")) for a, v in vars(m).items()
        if callable(v) and getattr(v, "__module__", "") == "brainevent._op.kernix_pipeline"
        and a in {LOADERS!r}]
print(json.dumps({{"replaced": report.replaced, "left": left,
                  "pipeline": all(getattr(getattr(kp, n), "__wrapped__", None) is getattr(bekc, n)
                                  for n in {LOADERS!r})}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["left"] == [] and result["pipeline"] and result["replaced"] >= 30


# --------------------------------------------------------------------------- end to end
def test_brainevent_builds_through_bekc_on_cpu(bekc_bin, tmp_path):
    bekc.use_for_brainevent()
    name = unique_prefix("be_cpu")
    mod = brainevent.load_cpp_inline(name=name, cpp_sources=SCALE_CPP)
    assert isinstance(mod, bekc.Module)
    assert os.path.realpath(mod.path).startswith(os.path.realpath(bekc.get_cache_dir()))
    assert mod.function_names == ["scale"]
    assert mod.content_hash == "sha256:" + hashlib.sha256(open(mod.path, "rb").read()).hexdigest()[:16]
    x = jnp.arange(8, dtype=jnp.float32)
    y = jax.ffi.ffi_call(f"{name}.scale", jax.ShapeDtypeStruct(x.shape, x.dtype))(
        x, factor=np.float32(1.5))
    np.testing.assert_allclose(y, 1.5 * x)
    np.testing.assert_allclose(jax.jit(lambda v: mod.scale(v, factor=2.0))(x), 2 * x)
    # the file loader, reached the way brainevent's own modules reach it
    src = tmp_path / f"{name}_file.cpp"
    src.write_text(SCALE_CPP)
    from brainevent._op import load_cpp_file
    fmod = load_cpp_file(src)
    np.testing.assert_allclose(fmod.scale(x, factor=3.0), 3 * x)
