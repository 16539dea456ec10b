"""Cache hits and misses of `bekc build` with the real compilers (SPEC §5).

A hit must follow only from unchanged inputs: every edit of a source, of an
included header (also one seen only by nvcc's host pass, and one rewritten with
the same size and its mtime put back), of a flag or of the arch list must
miss; a `touch` must not. Most cases use small .cpp inputs at -O0 to keep the
suite fast; the CUDA-specific ones share one .cu test.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.kernels import SCALE_ANONYMOUS_CU

FAST = "-O0"  # optimisation is not the point here; -O0 compiles 3x faster


# Puts the value of VAL into the library's bytes, so a test can tell which
# header content a served library was really compiled from.
PROBE = """
#define BEKC_STR2(x) #x
#define BEKC_STR(x) BEKC_STR2(x)
extern "C" __attribute__((visibility("default"), used))
const char bekc_probe[] = "PROBE<" BEKC_STR(VAL) ">";
"""


def probe(library: Path) -> str:
    found = re.findall(rb"PROBE<([^>]*)>", Path(library).read_bytes())
    assert len(found) == 1, found
    return found[0].decode()


def same_size_rewrite(path: Path, text: str, keep_mtime: bool = True) -> None:
    """Replace the content with text of the same length, putting back the mtime
    (what an editor's save-twice-in-one-second, or `cp -p`, can leave)."""
    st = os.stat(path)
    assert len(text.encode()) == st.st_size, "test bug: sizes must match"
    path.write_text(text)
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert after.st_size == st.st_size
    if keep_mtime:
        assert after.st_mtime_ns == st.st_mtime_ns


# --------------------------------------------------------------------------- hits
def test_unchanged_rebuild_is_a_fast_hit(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    first = bekc.build(src, FAST)
    assert first.hit is False
    assert first.info["targets"] == ["k.add_one"]
    second = bekc.build(src, FAST)
    assert second.hit is True
    assert second.manifest_path == first.manifest_path
    assert second.key == first.key
    assert second.info["timings"]["total_s"] < 0.5, second.info
    assert len(bekc.entries()) == 1


def test_a_hit_runs_no_compiler(bekc, kernels, tmp_path):
    """The host compiler is a logging wrapper: a hit must not start it."""
    import shutil

    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no host compiler")
    log = tmp_path / "compiler.log"
    wrapper = tmp_path / "bin" / "logging-g++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{gxx}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    src = kernels.cpp(bekc.workdir / "k.cpp")
    first = bekc.build(src, FAST, "--cxx", wrapper)
    assert first.hit is False
    calls = log.read_text().splitlines()
    assert any("k.bekc.cpp" in c for c in calls), calls
    second = bekc.build(src, FAST, "--cxx", wrapper)
    assert second.hit is True
    assert log.read_text().splitlines() == calls, "a cache hit ran the compiler"


def test_stdout_is_the_manifest_path_as_last_line(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    for _ in range(2):  # miss, then hit
        proc = bekc.run("build", src, FAST, "--cache-dir", bekc.cache_dir, "-v")
        assert proc.returncode == 0, proc.stderr
        last = proc.stdout.strip().splitlines()[-1]
        assert Path(last).is_file() and Path(last).name == "manifest.json"
        assert proc.stdout.strip() == last, "progress belongs on stderr"


def test_touch_without_change_is_still_a_hit(bekc, kernels):
    d = bekc.workdir
    (d / "inc").mkdir()
    (d / "inc" / "val.h").write_text("#define VAL 3.0f\n")
    src = kernels.cpp(d / "k.cpp", includes=["val.h"], value="VAL")
    first = bekc.build(src, FAST, "-I", d / "inc")
    later = time.time() + 5
    for p in (src, d / "inc" / "val.h"):
        os.utime(p, (later, later))
    again = bekc.build(src, FAST, "-I", d / "inc")
    assert again.hit is True, again.info
    assert again.key == first.key
    # And once more, after the record was refreshed.
    assert bekc.build(src, FAST, "-I", d / "inc").hit is True


# --------------------------------------------------------------------------- misses
def test_editing_the_source_misses_and_reverting_hits(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp", value="1.0f")
    a = bekc.build(src, FAST)
    kernels.cpp(src, value="2.0f")
    b = bekc.build(src, FAST)
    assert b.hit is False
    assert b.key != a.key
    assert b.manifest["library_sha256"] != a.manifest["library_sha256"]
    kernels.cpp(src, value="1.0f")
    c = bekc.build(src, FAST)
    assert c.hit is True and c.key == a.key


def test_editing_an_included_header_misses(bekc, kernels):
    d = bekc.workdir
    (d / "val.h").write_text('#include "deep/inner.h"\n#define VAL INNER\n')
    (d / "deep").mkdir()
    (d / "deep" / "inner.h").write_text("#define INNER 1.0f\n")
    src = kernels.cpp(d / "k.cpp", includes=["val.h"], value="VAL")
    a = bekc.build(src, FAST)
    (d / "val.h").write_text('#include "deep/inner.h"\n#define VAL (INNER + 1.0f)\n')
    b = bekc.build(src, FAST)
    assert b.hit is False and b.key != a.key
    # A header included by a header.
    (d / "deep" / "inner.h").write_text("#define INNER 7.0f\n")
    c = bekc.build(src, FAST)
    assert c.hit is False and c.key not in (a.key, b.key)


def test_same_size_edits_with_mtime_put_back_miss(bekc, kernels):
    """Two same-size edits of a header, each with the old mtime restored by
    os.utime: only ctime and the content tell. The first edit comes after the
    racy window (so a stat match alone would be trusted), the second in the
    same second as the record made by the build before it."""
    d = bekc.workdir
    h = d / "val.h"
    h.write_text("#define VAL 1.0f /* edit */\n")
    src = kernels.cpp(d / "k.cpp", includes=["val.h"], value="VAL", extra=PROBE)
    a = bekc.build(src, FAST)
    assert probe(a.library) == "1.0f"
    time.sleep(2.5)
    same_size_rewrite(h, "#define VAL 2.0f /* edit */\n")
    b = bekc.build(src, FAST)
    assert b.hit is False, "same-size edit with restored mtime was not noticed"
    assert b.key != a.key
    assert probe(b.library) == "2.0f"
    same_size_rewrite(h, "#define VAL 3.0f /* edit */\n")
    c = bekc.build(src, FAST)
    assert c.hit is False, "second edit within the same second was not noticed"
    assert c.key not in (a.key, b.key)
    assert probe(c.library) == "3.0f"
    # Going back to the first content finds the first entry again.
    same_size_rewrite(h, "#define VAL 1.0f /* edit */\n")
    back = bekc.build(src, FAST)
    assert back.hit is True and back.key == a.key
    assert probe(back.library) == "1.0f"


def test_header_saved_during_the_compile_is_not_a_stale_hit(bekc, kernels, tmp_path):
    """The user saves val.h while the compiler runs (simulated by a compiler
    wrapper that rewrites it after compiling). The library served for the new
    content must be built from the new content."""
    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no host compiler")
    d = bekc.workdir
    h = d / "val.h"
    h.write_text("#define VAL 1.0f\n")
    wrapper = tmp_path / "bin" / "editing-g++"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys\n"
        f"rc = subprocess.run([{gxx!r}] + sys.argv[1:]).returncode\n"
        "# Only the kernel's compile edits it (bekc also compiles its handler\n"
        "# support object once per compiler, before).\n"
        "if any(a.endswith('.bekc.cpp') for a in sys.argv):\n"
        f"    open({str(h)!r}, 'w').write('#define VAL 2.0f\\n')\n"
        "sys.exit(rc)\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    src = kernels.cpp(d / "k.cpp", includes=["val.h"], value="VAL", extra=PROBE)
    first = bekc.build(src, FAST, "--cxx", wrapper)
    assert probe(first.library) == "1.0f"
    assert h.read_text() == "#define VAL 2.0f\n"
    second = bekc.build(src, FAST, "--cxx", wrapper)
    assert probe(second.library) == "2.0f", (
        f"served a library built from VAL 1.0f for a header saying 2.0f (hit={second.hit})")


def test_deleting_an_included_header_is_not_a_stale_hit(bekc, kernels):
    d = bekc.workdir
    (d / "val.h").write_text("#define VAL 1.0f\n")
    src = kernels.cpp(d / "k.cpp", includes=["val.h"], value="VAL")
    bekc.build(src, FAST)
    (d / "val.h").unlink()
    gone = bekc.build(src, FAST, ok=False)
    assert gone.rc == 1
    assert "val.h" in gone.stderr


# Each replaces the base build's [FAST]; -O may be given only once.
FLAG_VARIANTS = [
    ["-O1"],
    [FAST, "-D", "EXTRA=1"],
    [FAST, "--fast-math"],
    [FAST, "--std", "c++20"],
    [FAST, "--cxx-flag=-fno-strict-aliasing"],
    [FAST, "--ldflag=-lm"],
    [FAST, "--target-prefix", "other_prefix"],
    [FAST, "-I", "unused_inc"],
]


def test_changing_any_flag_misses(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    (bekc.workdir / "unused_inc").mkdir()
    base = bekc.build(src, FAST)
    keys = {base.key}
    for extra in FLAG_VARIANTS:
        r = bekc.build(src, *extra)
        assert r.hit is False, f"{extra} was a hit"
        assert r.key not in keys, f"{extra} reused a key"
        keys.add(r.key)
    # Nothing about the base build changed: still a hit.
    assert bekc.build(src, FAST).hit is True


def test_flags_reach_the_real_compile(bekc, kernels):
    """Each option must really be passed: the source refuses to compile
    without them, and the link flag leaves a trace in the library."""
    d = bekc.workdir
    (d / "inc dir").mkdir()
    (d / "inc dir" / "only_here.h").write_text("#define ONLY_HERE 1\n")
    src = kernels.cpp(d / "k.cpp", includes=["only_here.h"], extra="""
#ifndef FROM_D
#error "-D did not arrive"
#endif
#ifndef FROM_CXX_FLAG
#error "--cxx-flag did not arrive"
#endif
#if __cplusplus < 202002L
#error "--std did not arrive"
#endif
""")
    r = bekc.build(src, FAST, "-I", d / "inc dir", "-D", "FROM_D", "--cxx-flag=-DFROM_CXX_FLAG",
                   "--std", "c++20", "--ldflag=-Wl,-soname,libbekc_soname_probe.so")
    assert b"libbekc_soname_probe.so" in r.library.read_bytes()
    flags = r.manifest["flags"]
    assert flags["opt_level"] == 0
    assert "FROM_D" in flags["defines"]


def test_options_that_do_not_change_the_library_do_not_miss(bekc, kernels, tmp_path):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    base = bekc.build(src, FAST, "-j1")
    for extra in (["-j2"], ["-v"], ["-q"], ["--no-cuda-graph"], ["-o", tmp_path / "o"],
                  ["--depfile", tmp_path / "k.d"]):
        r = bekc.build(src, FAST, *extra)
        assert r.hit is True, f"{extra} caused a rebuild"
        assert r.key == base.key


def test_force_rebuilds_into_the_same_entry(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    a = bekc.build(src, FAST)
    f = bekc.build(src, FAST, "--force")
    assert f.hit is False
    assert f.info["timings"]["compile_s"] > 0
    assert f.key == a.key
    assert len(bekc.entries()) == 1
    assert bekc.build(src, FAST).hit is True


def test_a_new_file_in_an_input_directory_misses(bekc, kernels):
    d = bekc.workdir / "mod"
    kernels.cpp(d / "a.cpp", fn="fa")
    first = bekc.build(d, FAST, "--name", "mod")
    assert first.info["targets"] == ["mod.fa"]
    kernels.cpp(d / "b.cpp", fn="fb")
    second = bekc.build(d, FAST, "--name", "mod")
    assert second.hit is False
    assert sorted(second.info["targets"]) == ["mod.fa", "mod.fb"]


# --------------------------------------------------------------------------- shadowing
def test_header_shadowed_through_an_earlier_include_dir_misses(bekc, kernels):
    d = bekc.workdir
    (d / "first").mkdir()
    (d / "second").mkdir()
    (d / "second" / "val.h").write_text("#define VAL 2.0f\n")
    src = kernels.cpp(d / "src" / "k.cpp", includes=["val.h"], value="VAL")
    args = (src, FAST, "-I", d / "first", "-I", d / "second")
    a = bekc.build(*args)
    assert bekc.build(*args).hit is True
    (d / "first" / "val.h").write_text("#define VAL 1.0f\n")
    b = bekc.build(*args)
    assert b.hit is False, "a header that now shadows the recorded one was ignored"
    assert b.key != a.key


def test_header_shadowed_next_to_the_source_misses(bekc, kernels):
    """A quoted include looks in the source's own directory before any -I."""
    d = bekc.workdir
    (d / "inc").mkdir()
    (d / "inc" / "val.h").write_text("#define VAL 2.0f\n")
    src = kernels.cpp(d / "src" / "k.cpp", includes=["val.h"], value="VAL")
    a = bekc.build(src, FAST, "-I", d / "inc")
    (d / "src" / "val.h").write_text("#define VAL 1.0f\n")
    b = bekc.build(src, FAST, "-I", d / "inc")
    assert b.hit is False
    assert b.key != a.key


def test_header_shadowed_next_to_an_including_header_misses(bekc, kernels):
    """inc/sub/outer.h does `#include "inner.h"`, found as inc/inner.h via -I.
    A new inc/sub/inner.h is found first (the includer's directory), so the
    compile would change."""
    d = bekc.workdir
    (d / "inc" / "sub").mkdir(parents=True)
    (d / "inc" / "sub" / "outer.h").write_text('#include "inner.h"\n#define VAL INNER\n')
    (d / "inc" / "inner.h").write_text("#define INNER 1.0f\n")
    src = kernels.cpp(d / "src" / "k.cpp", includes=["sub/outer.h"], value="VAL")
    a = bekc.build(src, FAST, "-I", d / "inc")
    (d / "inc" / "sub" / "inner.h").write_text("#define INNER 2.0f\n")
    b = bekc.build(src, FAST, "-I", d / "inc")
    assert b.hit is False, "stale hit: inc/sub/inner.h now shadows inc/inner.h"
    assert b.key != a.key


def test_system_header_shadowed_by_an_include_dir_misses(bekc, kernels):
    if not Path("/usr/include/zlib.h").is_file() and not Path("/usr/include/unistd.h").is_file():
        pytest.skip("no /usr/include header to shadow")
    name = "zlib.h" if Path("/usr/include/zlib.h").is_file() else "unistd.h"
    d = bekc.workdir
    (d / "inc").mkdir()
    src = kernels.cpp(d / "k.cpp", extra=f"#include <{name}>\n")
    a = bekc.build(src, FAST, "-I", d / "inc")
    (d / "inc" / name).write_text(f"#include_next <{name}>\n#define BEKC_SHADOWED 1\n")
    b = bekc.build(src, FAST, "-I", d / "inc")
    assert b.hit is False, f"stale hit: inc/{name} now shadows /usr/include/{name}"
    assert b.key != a.key


# --------------------------------------------------------------------------- CUDA
HOST_ONLY_KERNEL = """\
#include "brainevent/common.h"
#include "common_val.h"
#ifndef __CUDA_ARCH__
#include "host_only.h"
#endif
#ifdef __CUDA_ARCH__
#include "device_only.h"
#endif
#ifndef CUDA_FLAG_SEEN
#error "--cuda-flag did not arrive"
#endif

__global__ void scale_kernel(const float* in, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
#ifdef __CUDA_ARCH__
    if (i < n) out[i] = in[i] * DEVICE_SCALE + COMMON_VAL;
#endif
}

// @BE scale
void scale(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    int64_t n = x.numel();
#ifndef __CUDA_ARCH__
    int threads = HOST_THREADS;
#else
    int threads = 256;
#endif
    scale_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), n);
}
"""


def test_cuda_header_edits_and_arch_changes_miss(bekc, kernels, nvcc):
    """One .cu input: hit when unchanged; miss after editing a header seen only
    by the host pass (what ccache and sccache got wrong), after editing one seen
    only by the device pass, and after changing the arch list."""
    d = bekc.workdir
    (d / "common_val.h").write_text("#define COMMON_VAL 0.0f\n")
    (d / "host_only.h").write_text("#define HOST_THREADS 256\n")
    (d / "device_only.h").write_text("#define DEVICE_SCALE 2.0f\n")
    src = kernels.text(d / "scale.cu", HOST_ONLY_KERNEL)
    args = [src, "--arch", "sm_90", FAST, "--cuda-flag=-DCUDA_FLAG_SEEN"]

    a = bekc.build(*args)
    assert a.hit is False
    m = a.manifest
    assert m["toolchain"]["archs"] == ["sm_90"]
    assert m["toolchain"]["nvcc"] is not None
    assert [t["platform"] for t in m["targets"]] == ["CUDA"]
    assert bekc.build(*args).hit is True

    (d / "host_only.h").write_text("#define HOST_THREADS 128\n")
    b = bekc.build(*args)
    assert b.hit is False, "edit of a host-pass-only header was a hit"
    assert b.key != a.key

    (d / "device_only.h").write_text("#define DEVICE_SCALE 3.0f\n")
    c = bekc.build(*args)
    assert c.hit is False, "edit of a device-pass-only header was a hit"
    assert c.key not in (a.key, b.key)

    e = bekc.build(src, "--arch", "sm_80", FAST, "--cuda-flag=-DCUDA_FLAG_SEEN")
    assert e.hit is False, "a changed arch list was a hit"
    assert e.manifest["toolchain"]["archs"] == ["sm_80"]
    # The same arch list spelled differently is the same build.
    same = bekc.build(src, "--arch", "8.0,80", FAST, "--cuda-flag=-DCUDA_FLAG_SEEN")
    assert same.hit is True and same.key == e.key


def test_handler_support_object_is_compiled_once_per_compiler_and_linked_after(bekc, kernels):
    """The first build with a host compiler compiles bekc_rt.o into the cache;
    every build links it, and later builds do not compile it again. The
    support functions end up in each library, hidden."""
    d = bekc.workdir
    first = bekc.build(kernels.cpp(d / "a.cpp", fn="first_fn"), FAST, "-v")
    objects = list((bekc.cache_dir / "runtime").glob("*/obj/*/bekc_rt.o"))
    assert len(objects) == 1, objects
    assert "handler_rt.cpp" in first.stderr and str(objects[0]) in first.stderr
    stamp = objects[0].stat().st_mtime_ns
    second = bekc.build(kernels.cpp(d / "b.cpp", fn="second_fn"), FAST, "-v")
    assert "handler_rt.cpp" not in second.stderr
    assert str(objects[0]) in second.stderr  # linked
    assert objects[0].stat().st_mtime_ns == stamp
    for b, fn in ((first, "first_fn"), (second, "second_fn")):
        nm = subprocess.run(["nm", "-D", "--defined-only", b.library], capture_output=True,
                            text=True)
        assert f"bekc_ffi_{fn}" in nm.stdout
        # The support functions are in the library, and not exported.
        local = subprocess.run(["nm", "-C", b.library], capture_output=True, text=True).stdout
        assert "bekc_rt::handle(" in local and "bekc_rt::handle(" not in nm.stdout


def test_forcing_a_cuda_rebuild_gives_the_same_library(bekc, kernels, nvcc):
    """`--force` under an unchanged key must rebuild the very same library:
    nvcc names its intermediate files after its process id, and that name
    reached the object (its file symbol) until bekc asked for names taken
    from the object's (-objtemp); then every forced CUDA rebuild warned that
    the library differed although nothing had changed."""
    src = kernels.cu(bekc.workdir / "det.cu", fn="det_fn")
    args = [src, "--arch", "sm_90", FAST]
    first = bekc.build(*args)
    before = first.library.read_bytes()
    again = bekc.build(*args, "--force")
    assert again.key == first.key
    assert "differs" not in again.stderr, again.stderr
    assert again.library.read_bytes() == before


@pytest.mark.parametrize("flags", [[], ["--cuda-flag=-rdc=true"]], ids=["whole-program", "rdc"])
def test_forcing_a_cuda_rebuild_in_one_nvcc_process_gives_the_same_library(bekc, nvcc, flags):
    """A compile that stays one nvcc process ($BEKC_SPLIT_NVCC=0, -rdc, a
    launcher) rebuilds the very same library under --force too: nvcc names
    a source's internal device symbols (an anonymous namespace's kernel and
    variable) after a module id it derives from the source's path, and bekc
    gives it a path that stays the same from build to build, not the
    private build directory's."""
    (bekc.workdir / "scale.h").write_text("#define SCALE 2.0f\n")
    src = bekc.workdir / "scale.cu"
    src.write_text(SCALE_ANONYMOUS_CU)
    env = {k: v for k, v in os.environ.items() if k != "BEKC_CACHE_DIR"}
    env["BEKC_SPLIT_NVCC"] = "0"
    args = [src, "--arch", "80", FAST, *flags]
    first = bekc.build(*args, env=env)
    before = first.library.read_bytes()
    again = bekc.build(*args, "--force", env=env)
    assert again.key == first.key
    assert "differs" not in again.stderr, again.stderr
    assert again.library.read_bytes() == before


@pytest.mark.parametrize("case", ["cpp -g", "cu -g", "cu -g one nvcc"])
def test_forcing_a_debug_rebuild_gives_the_same_library(bekc, kernels, nvcc, case):
    """Host debug information names the files compiled, and bekc compiles
    each source through a wrapper in a private build directory that is new
    for each build: the host compilers name that directory by a fixed name
    (-ffile-prefix-map), so `--force` under an unchanged key rebuilds the
    very same library, which holds no path of the private directory."""
    kind, flag, *one = case.split(" ", 2)
    env = {k: v for k, v in os.environ.items() if k not in ("BEKC_CACHE_DIR", "BEKC_SPLIT_NVCC")}
    if one:
        env["BEKC_SPLIT_NVCC"] = "0"
    make = kernels.cpp if kind == "cpp" else kernels.cu
    src = make(bekc.workdir / f"dbg.{kind}", fn="dbg_fn")
    args = [src, FAST, f"--{'cxx' if kind == 'cpp' else 'cuda'}-flag={flag}"]
    if kind == "cu":
        args += ["--arch", "80"]
    first = bekc.build(*args, env=env)
    before = first.library.read_bytes()
    assert b"/build." not in before
    again = bekc.build(*args, "--force", env=env)
    assert again.key == first.key
    assert "differs" not in again.stderr, again.stderr
    assert again.library.read_bytes() == before


@pytest.mark.parametrize("case", ["-lineinfo", "-lineinfo one nvcc", "-G one nvcc"])
def test_forcing_a_rebuild_with_device_line_info_says_why_the_library_differs(bekc, kernels, nvcc,
                                                                             case):
    """nvcc's device line and debug information (-lineinfo, -G) name the
    wrapper in bekc's private build directory, new for each build, and no
    prefix map reaches them: `--force` rebuilds a library that may differ,
    and says why under -v instead of warning that an input escaped the
    key."""
    flag, *one = case.split(" ", 1)
    env = {k: v for k, v in os.environ.items() if k not in ("BEKC_CACHE_DIR", "BEKC_SPLIT_NVCC")}
    if one:
        env["BEKC_SPLIT_NVCC"] = "0"
    src = kernels.cu(bekc.workdir / "lines.cu", fn="lines_fn")
    args = [src, FAST, "--arch", "80", f"--cuda-flag={flag}"]
    first = bekc.build(*args, env=env)
    before = first.library.read_bytes()
    quiet = bekc.build(*args, "--force", env=env)
    assert quiet.key == first.key
    assert "warning" not in quiet.stderr and "please report" not in quiet.stderr, quiet.stderr
    said = bekc.build(*args, "--force", "-v", env=env)
    if said.library.read_bytes() != quiet.library.read_bytes():
        assert "name bekc's private build directory" in said.stderr, said.stderr
    assert "please report" not in said.stderr, said.stderr
