"""No stale hits: for every kind of input a library is built from, changing it
must miss, and the library served afterwards must be built from the new input.

Each test builds, changes one input, builds again and asserts both a miss and
what the new library does: the kernels export `bekc_probe()` (or
`bekc_probe_text()`), which returns a value taken from the input under test
(a header, an environment variable, a static library...); it is called
through ctypes in a child Python, so every call loads the library afresh.
Controls assert a hit when nothing changed. The kinds:

* source; headers (quoted beside the source, quoted and <> through -I);
* environment the compilers read: CPATH (also a header appearing in an
  earlier CPATH directory), CPLUS_INCLUDE_PATH, SOURCE_DATE_EPOCH, LIBRARY_PATH,
  LD_RUN_PATH, and for nvcc NVCC_APPEND_FLAGS, NVCC_PREPEND_FLAGS and INCLUDES
  (nvcc.profile);
* link inputs: a static library named by --ldflag or --linker-arg and rebuilt,
  one found through -L/-l and rebuilt, one appearing in an earlier -L
  directory, and the same with a linker that has no --dependency-file;
* `__has_include`: a header appearing (quoted, <>, asked in a user header)
  and one disappearing;
* the toolchain: another host compiler, an edited compiler wrapper;
* options: -D, -O, --std, --arch.

.cpp kernels with g++ wherever possible; nvcc only for its own variables.
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

FAST = "-O0"

# Variables bekc keys; the tests set them explicitly, so the caller's own
# values must not leak in.
KEYED_ENV = ("CPATH", "CPLUS_INCLUDE_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH",
             "LIBRARY_PATH", "SOURCE_DATE_EPOCH", "GCC_COMPARE_DEBUG", "CCC_OVERRIDE_OPTIONS",
             "CLANG_NO_DEFAULT_CONFIG", "LD_RUN_PATH", "NVCC_PREPEND_FLAGS",
             "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "INCLUDES", "SYSTEM_INCLUDES", "LIBRARIES",
             "CUDAFE_FLAGS", "PTXAS_FLAGS", "NVLINK_FLAGS", "NVVM_FLAGS", "OCG_FLAGS",
             "LLVMC_FLAGS", "NVASM_FLAGS", "CXX", "BEKC_CACHE_DIR")


def env(**values: str) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in KEYED_ENV}
    base.update(values)
    return base


PROBE_KERNEL = """\
#include "brainevent/common.h"
{before}

// @BE add_one
void add_one(const BE::Tensor x, BE::Tensor out) {{
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + 1.0f;
}}

extern "C" __attribute__((visibility("default"))) int bekc_probe() {{ return (int)({expr}); }}
"""


def probe_source(path: Path, expr: str, before: str = "") -> Path:
    """A kernel whose library exports `int bekc_probe()` returning `expr`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PROBE_KERNEL.format(before=before, expr=expr))
    return path


_CALL = """\
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
fn = getattr(lib, sys.argv[2])
fn.restype = ctypes.c_char_p if sys.argv[3] == "text" else ctypes.c_int
value = fn()
print(value.decode() if isinstance(value, bytes) else value)
"""


def call(library: Path, fn: str = "bekc_probe", kind: str = "int") -> str:
    """Loads the library in a fresh Python and returns what `fn()` returns."""
    proc = subprocess.run([sys.executable, "-c", _CALL, str(library), fn, kind],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def probe(build) -> int:
    return int(call(build.library))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def gxx() -> str:
    found = shutil.which("g++")
    if found is None:
        pytest.skip("no g++")
    return found


def static_library(path: Path, value: int, fn: str = "bekc_foo") -> Path:
    """Builds `path` (libNAME.a) holding `int fn()` returning `value`. The
    archive is replaced whole, as a rebuild would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_suffix(".src.cpp")
    obj = path.with_suffix(".o")
    src.write_text(f"int {fn}() {{ return {value}; }}\n")
    subprocess.run([gxx(), "-c", "-fPIC", "-O0", str(src), "-o", str(obj)], check=True)
    if path.exists():
        path.unlink()
    subprocess.run(["ar", "rcs", str(path), str(obj)], check=True)
    return path


def linked_source(path: Path) -> Path:
    return probe_source(path, "bekc_foo()", before="int bekc_foo();")


def miss_then(bekc, *args, expect: int, env_=None):
    r = bekc.build(*args, env=env_ if env_ is not None else env())
    assert r.hit is False, "stale hit: the changed input was not noticed"
    assert probe(r) == expect, "the library was not built from the new input"
    return r


# --------------------------------------------------------------------------- controls
def test_nothing_changed_is_a_hit_with_every_kind_of_input(bekc, tmp_path):
    """All the new kinds of input at once, unchanged: hits, also after a touch.
    Guards against keys that can never hit again (a temporary the linker read,
    an absent path that exists)."""
    d = bekc.workdir
    write(d / "cpath" / "cfg.h", "#define CFG 2\n")
    write(d / "inc" / "present.h", "#define PRESENT 3\n")
    static_library(d / "libs" / "libfoo.a", 4)
    lib = static_library(d / "abs" / "libbar.a", 5, fn="bekc_bar")
    src = probe_source(d / "src" / "k.cpp", "CFG + PRESENT + bekc_foo() + HAS_OPT", before="""
#include <cfg.h>
#if __has_include("opt.h")
#define HAS_OPT 100
#else
#define HAS_OPT 0
#endif
#if __has_include(<present.h>)
#include <present.h>
#endif
int bekc_foo();
""")
    args = (src, FAST, "-I", d / "inc", "--ldflag=-L" + str(d / "libs"), "--ldflag=-lfoo",
            f"--ldflag={lib}", "--linker-arg=-L" + str(d / "abs"))
    e = env(CPATH=str(d / "cpath"), SOURCE_DATE_EPOCH="0", LIBRARY_PATH=str(d / "abs"))
    first = bekc.build(*args, env=e)
    assert first.hit is False
    assert probe(first) == 2 + 3 + 4
    again = bekc.build(*args, env=e)
    assert again.hit is True, again.info
    assert again.key == first.key and again.library == first.library
    later = time.time() + 5
    for p in (src, d / "cpath" / "cfg.h", d / "inc" / "present.h", d / "libs" / "libfoo.a", lib):
        os.utime(p, (later, later))
    assert bekc.build(*args, env=e).hit is True


def test_unrelated_environment_changes_still_hit(bekc):
    src = probe_source(bekc.workdir / "k.cpp", "1")
    first = bekc.build(src, FAST, env=env())
    for extra in ({"LANG": "C"}, {"C_INCLUDE_PATH": "/nowhere"}, {"TMPDIR": "/tmp"},
                  {"NVCC_APPEND_FLAGS": "-DONLY_FOR_NVCC=1"}):
        r = bekc.build(src, FAST, env=env(**extra))
        assert r.hit is True, f"{extra} made a .cpp build miss"
        assert r.key == first.key


# --------------------------------------------------------------------------- source and headers
def test_source_edit(bekc):
    src = probe_source(bekc.workdir / "k.cpp", "1")
    assert probe(bekc.build(src, FAST)) == 1
    probe_source(src, "2")
    miss_then(bekc, src, FAST, expect=2)


@pytest.mark.parametrize("where", ["beside", "quoted -I", "angled -I"])
def test_header_edit(bekc, where):
    d = bekc.workdir
    header = d / ("src" if where == "beside" else "inc") / "val.h"
    (d / "inc").mkdir()
    write(header, "#define VAL 1\n")
    include = "<val.h>" if where == "angled -I" else '"val.h"'
    src = probe_source(d / "src" / "k.cpp", "VAL", before=f"#include {include}")
    args = (src, FAST, "-I", d / "inc")
    assert probe(bekc.build(*args)) == 1
    assert bekc.build(*args).hit is True
    write(header, "#define VAL 2\n")
    miss_then(bekc, *args, expect=2)


# --------------------------------------------------------------------------- environment
def test_cpath_change(bekc):
    d = bekc.workdir
    write(d / "a" / "cfg.h", "#define CFG 1\n")
    write(d / "b" / "cfg.h", "#define CFG 2\n")
    src = probe_source(d / "k.cpp", "CFG", before="#include <cfg.h>")
    first = bekc.build(src, FAST, env=env(CPATH=str(d / "a")))
    assert probe(first) == 1
    assert bekc.build(src, FAST, env=env(CPATH=str(d / "a"))).hit is True
    second = miss_then(bekc, src, FAST, env_=env(CPATH=str(d / "b")), expect=2)
    assert second.key != first.key
    back = bekc.build(src, FAST, env=env(CPATH=str(d / "a")))
    assert back.key == first.key and probe(back) == 1


def test_cpath_relative_directory_follows_the_working_directory(bekc):
    """CPATH=inc means another directory from another working directory."""
    d = bekc.workdir
    write(d / "one" / "inc" / "cfg.h", "#define CFG 1\n")
    write(d / "two" / "inc" / "cfg.h", "#define CFG 2\n")
    src = probe_source(d / "k.cpp", "CFG", before="#include <cfg.h>")
    assert probe(bekc.build(src, FAST, cwd=d / "one", env=env(CPATH="inc"))) == 1
    r = bekc.build(src, FAST, cwd=d / "two", env=env(CPATH="inc"))
    assert r.hit is False and probe(r) == 2


def test_header_appearing_in_an_earlier_cpath_directory(bekc):
    d = bekc.workdir
    (d / "a").mkdir()
    write(d / "b" / "cfg.h", "#define CFG 2\n")
    src = probe_source(d / "k.cpp", "CFG", before="#include <cfg.h>")
    e = env(CPATH=f"{d / 'a'}:{d / 'b'}")
    assert probe(bekc.build(src, FAST, env=e)) == 2
    assert bekc.build(src, FAST, env=e).hit is True
    write(d / "a" / "cfg.h", "#define CFG 1\n")
    miss_then(bekc, src, FAST, env_=e, expect=1)


def test_header_appearing_in_an_include_dir_before_cpath(bekc):
    d = bekc.workdir
    (d / "inc").mkdir()
    write(d / "cpath" / "cfg.h", "#define CFG 2\n")
    src = probe_source(d / "src" / "k.cpp", "CFG", before="#include <cfg.h>")
    e = env(CPATH=str(d / "cpath"))
    assert probe(bekc.build(src, FAST, "-I", d / "inc", env=e)) == 2
    write(d / "inc" / "cfg.h", "#define CFG 1\n")
    miss_then(bekc, src, FAST, "-I", d / "inc", env_=e, expect=1)


def test_cplus_include_path_change(bekc):
    d = bekc.workdir
    write(d / "a" / "cfg.h", "#define CFG 1\n")
    write(d / "b" / "cfg.h", "#define CFG 2\n")
    src = probe_source(d / "k.cpp", "CFG", before="#include <cfg.h>")
    assert probe(bekc.build(src, FAST, env=env(CPLUS_INCLUDE_PATH=str(d / "a")))) == 1
    miss_then(bekc, src, FAST, env_=env(CPLUS_INCLUDE_PATH=str(d / "b")), expect=2)


def test_source_date_epoch_change(bekc):
    src = write(bekc.workdir / "k.cpp", PROBE_KERNEL.format(before="", expr="1") + """
extern "C" __attribute__((visibility("default"))) const char* bekc_probe_text() {
    return __DATE__;
}
""")
    first = bekc.build(src, FAST, env=env(SOURCE_DATE_EPOCH="0"))
    assert call(first.library, "bekc_probe_text", "text").split() == ["Jan", "1", "1970"]
    assert bekc.build(src, FAST, env=env(SOURCE_DATE_EPOCH="0")).hit is True
    second = bekc.build(src, FAST, env=env(SOURCE_DATE_EPOCH=str(400 * 86400)))
    assert second.hit is False, "stale hit: SOURCE_DATE_EPOCH changed __DATE__"
    assert call(second.library, "bekc_probe_text", "text").split() == ["Feb", "5", "1971"]


def test_library_path_change(bekc):
    d = bekc.workdir
    static_library(d / "a" / "libfoo.a", 1)
    static_library(d / "b" / "libfoo.a", 2)
    src = linked_source(d / "k.cpp")
    assert probe(bekc.build(src, FAST, "--ldflag=-lfoo", env=env(LIBRARY_PATH=str(d / "a")))) == 1
    miss_then(bekc, src, FAST, "--ldflag=-lfoo", env_=env(LIBRARY_PATH=str(d / "b")), expect=2)


def test_ld_run_path_change(bekc):
    src = probe_source(bekc.workdir / "k.cpp", "1")
    first = bekc.build(src, FAST, env=env(LD_RUN_PATH="/bekc/run/path/one"))
    assert b"/bekc/run/path/one" in first.library.read_bytes()
    second = bekc.build(src, FAST, env=env(LD_RUN_PATH="/bekc/run/path/two"))
    assert second.hit is False, "stale hit: LD_RUN_PATH sets the library's run path"
    assert b"/bekc/run/path/two" in second.library.read_bytes()


NVCC_KERNEL = """\
#include "brainevent/common.h"
#ifndef APPENDED
#define APPENDED 0
#endif
#ifndef PREPENDED
#define PREPENDED 0
#endif
#ifndef FROM_PROFILE
#define FROM_PROFILE 0
#endif
#define BEKC_STR2(x) #x
#define BEKC_STR(x) BEKC_STR2(x)
extern "C" __attribute__((visibility("default"), used))
const char bekc_probe_bytes[] = "PROBE<" BEKC_STR(APPENDED) "," BEKC_STR(PREPENDED) ","
                                BEKC_STR(FROM_PROFILE) ">";

__global__ void scale_kernel(const float* in, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2.0f;
}

// @BE scale
void scale(const BE::Tensor x, BE::Tensor out, int64_t stream) {
    int64_t n = x.numel();
    scale_kernel<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), n);
}
"""


def probe_bytes(library: Path) -> str:
    found = re.findall(rb"PROBE<([^>]*)>", Path(library).read_bytes())
    assert len(found) == 1, found
    return found[0].decode()


def test_nvcc_environment_and_arch(bekc, nvcc):
    """NVCC_APPEND_FLAGS, NVCC_PREPEND_FLAGS and INCLUDES (which nvcc.profile
    extends from the environment) change what nvcc compiles; so does --arch."""
    src = write(bekc.workdir / "scale.cu", NVCC_KERNEL)
    args = (src, "--arch", "sm_80", FAST, "--nvcc", nvcc)
    first = bekc.build(*args, env=env(NVCC_APPEND_FLAGS="-DAPPENDED=1"))
    assert probe_bytes(first.library) == "1,0,0"
    assert bekc.build(*args, env=env(NVCC_APPEND_FLAGS="-DAPPENDED=1")).hit is True

    steps = [
        (env(NVCC_APPEND_FLAGS="-DAPPENDED=2"), "2,0,0"),
        (env(NVCC_APPEND_FLAGS="-DAPPENDED=2", NVCC_PREPEND_FLAGS="-DPREPENDED=3"), "2,3,0"),
        (env(NVCC_APPEND_FLAGS="-DAPPENDED=2", NVCC_PREPEND_FLAGS="-DPREPENDED=3",
             INCLUDES="-DFROM_PROFILE=4"), "2,3,4"),
    ]
    keys = {first.key}
    for e, expected in steps:
        r = bekc.build(*args, env=e)
        assert r.hit is False, f"stale hit for {expected}"
        assert probe_bytes(r.library) == expected
        assert r.key not in keys
        keys.add(r.key)
    last_env = steps[-1][0]
    other_arch = bekc.build(src, "--arch", "sm_90", FAST, "--nvcc", nvcc, env=last_env)
    assert other_arch.hit is False
    assert other_arch.manifest["toolchain"]["archs"] == ["sm_90"]
    assert other_arch.key not in keys


# --------------------------------------------------------------------------- link inputs
@pytest.mark.parametrize("how", ["--ldflag", "--linker-arg"])
def test_static_library_named_by_path_rebuilt(bekc, how):
    d = bekc.workdir
    lib = static_library(d / "libs" / "libfoo.a", 1)
    src = linked_source(d / "k.cpp")
    args = (src, FAST, f"{how}={lib}")
    assert probe(bekc.build(*args)) == 1
    assert bekc.build(*args).hit is True
    static_library(lib, 2)
    miss_then(bekc, *args, expect=2)


def test_static_library_found_with_l_rebuilt(bekc):
    d = bekc.workdir
    lib = static_library(d / "libs" / "libfoo.a", 1)
    src = linked_source(d / "k.cpp")
    args = (src, FAST, "--ldflag=-L" + str(d / "libs"), "--ldflag=-lfoo")
    assert probe(bekc.build(*args)) == 1
    static_library(lib, 2)
    miss_then(bekc, *args, expect=2)


def test_library_appearing_in_an_earlier_l_directory(bekc):
    d = bekc.workdir
    (d / "first").mkdir()
    static_library(d / "second" / "libfoo.a", 2)
    src = linked_source(d / "k.cpp")
    args = (src, FAST, "--ldflag=-L" + str(d / "first"), "--ldflag=-L" + str(d / "second"),
            "--ldflag=-lfoo")
    assert probe(bekc.build(*args)) == 2
    assert bekc.build(*args).hit is True
    static_library(d / "first" / "libfoo.a", 1)
    miss_then(bekc, *args, expect=1)


def test_linker_without_dependency_file_falls_back_to_the_flags(bekc, tmp_path):
    """A linker older than binutils 2.35 refuses --dependency-file (simulated by
    a compiler wrapper): the build still succeeds, and the libraries the link
    flags name are keyed instead."""
    wrapper = tmp_path / "bin" / "old-ld-g++"
    write(wrapper, f"""#!/bin/sh
for a in "$@"; do
  case "$a" in
    --dependency-file=*) echo "/usr/bin/ld: unrecognized option '$a'" >&2; exit 1;;
  esac
done
exec "{gxx()}" "$@"
""")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    d = bekc.workdir
    by_path = static_library(d / "abs" / "libbar.a", 10, fn="bekc_bar")
    by_name = static_library(d / "libs" / "libfoo.a", 1)
    src = probe_source(d / "k.cpp", "bekc_foo() + bekc_bar()",
                       before="int bekc_foo(); int bekc_bar();")
    args = (src, FAST, "--cxx", wrapper, f"--ldflag={by_path}",
            "--ldflag=-L" + str(d / "libs"), "--ldflag=-lfoo")
    assert probe(bekc.build(*args)) == 11
    assert bekc.build(*args).hit is True
    static_library(by_name, 2)
    miss_then(bekc, *args, expect=12)
    static_library(by_path, 20, fn="bekc_bar")
    miss_then(bekc, *args, expect=22)


# --------------------------------------------------------------------------- __has_include
OPTIONAL = """
#if __has_include({name})
#include {name}
#else
#define OPT 1
#endif
"""


@pytest.mark.parametrize("name", ['"opt.h"', "<opt.h>"])
def test_has_include_header_appearing(bekc, name):
    d = bekc.workdir
    (d / "a").mkdir()
    (d / "b").mkdir()
    src = probe_source(d / "src" / "k.cpp", "OPT", before=OPTIONAL.format(name=name))
    args = (src, FAST, "-I", d / "a", "-I", d / "b")
    assert probe(bekc.build(*args)) == 1
    assert bekc.build(*args).hit is True
    write(d / "b" / "opt.h", "#define OPT 2\n")
    miss_then(bekc, *args, expect=2)
    write(d / "a" / "opt.h", "#define OPT 3\n")  # found first now
    miss_then(bekc, *args, expect=3)
    if name.startswith('"'):
        write(d / "src" / "opt.h", "#define OPT 4\n")  # beside the source: first of all
        miss_then(bekc, *args, expect=4)


def test_has_include_in_a_user_header(bekc):
    d = bekc.workdir
    write(d / "inc" / "config.h", OPTIONAL.format(name="<feature.h>").replace("OPT", "FEATURE"))
    src = probe_source(d / "src" / "k.cpp", "FEATURE", before='#include "config.h"')
    (d / "extra").mkdir()
    args = (src, FAST, "-I", d / "inc", "-I", d / "extra")
    assert probe(bekc.build(*args)) == 1
    write(d / "extra" / "feature.h", "#define FEATURE 5\n")
    miss_then(bekc, *args, expect=5)


def test_has_include_header_disappearing(bekc):
    """A header only asked about (never included) that goes away."""
    d = bekc.workdir
    write(d / "inc" / "flag.h", "")
    src = probe_source(d / "k.cpp", "FLAG", before="""
#if __has_include(<flag.h>)
#define FLAG 2
#else
#define FLAG 1
#endif
""")
    args = (src, FAST, "-I", d / "inc")
    assert probe(bekc.build(*args)) == 2
    assert bekc.build(*args).hit is True
    (d / "inc" / "flag.h").unlink()
    miss_then(bekc, *args, expect=1)


# --------------------------------------------------------------------------- toolchain
def test_another_host_compiler(bekc):
    clang = shutil.which("clang++")
    if clang is None:
        pytest.skip("no clang++")
    src = probe_source(bekc.workdir / "k.cpp", "IS_CLANG", before="""
#ifdef __clang__
#define IS_CLANG 1
#else
#define IS_CLANG 0
#endif
""")
    assert probe(bekc.build(src, FAST, "--cxx", gxx())) == 0
    miss_then(bekc, src, FAST, "--cxx", clang, expect=1)


def test_edited_compiler_wrapper(bekc, tmp_path):
    wrapper = tmp_path / "bin" / "cxx"
    write(wrapper, f'#!/bin/sh\nexec "{gxx()}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    src = probe_source(bekc.workdir / "k.cpp", "VIA", before="""
#ifndef VIA
#define VIA 1
#endif
""")
    assert probe(bekc.build(src, FAST, "--cxx", wrapper)) == 1
    write(wrapper, f'#!/bin/sh\nexec "{gxx()}" -DVIA=2 "$@"\n')
    miss_then(bekc, src, FAST, "--cxx", wrapper, expect=2)


# --------------------------------------------------------------------------- options
def test_define_change(bekc):
    src = probe_source(bekc.workdir / "k.cpp", "VAL")
    assert probe(bekc.build(src, FAST, "-D", "VAL=1")) == 1
    miss_then(bekc, src, FAST, "-D", "VAL=2", expect=2)


def test_optimisation_level_change(bekc):
    src = probe_source(bekc.workdir / "k.cpp", "OPTIMIZED", before="""
#ifdef __OPTIMIZE__
#define OPTIMIZED 1
#else
#define OPTIMIZED 0
#endif
""")
    assert probe(bekc.build(src, "-O0")) == 0
    miss_then(bekc, src, "-O1", expect=1)


def test_standard_change(bekc):
    src = probe_source(bekc.workdir / "k.cpp", "__cplusplus / 100")
    assert probe(bekc.build(src, FAST, "--std", "c++17")) == 2017
    miss_then(bekc, src, FAST, "--std", "c++20", expect=2020)
