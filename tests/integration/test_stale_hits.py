"""No stale hits: for every kind of input a library is built from, changing it
must miss, and the library served afterwards must be built from the new input.

Each test builds, changes one input, builds again and asserts both a miss and
what the new library does: the kernels export `bekc_probe()` (or
`bekc_probe_text()`), which returns a value taken from the input under test
(a header, an environment variable, a static library...); it is called
through ctypes in a child Python, so every call loads the library afresh.
Controls assert a hit when nothing changed. The kinds:

* source; headers (quoted beside the source, quoted and <> through -I; one
  reached by "../" from a directory that is a link, which the compiler opens
  where the kernel resolves it); include directories given as compiler flags
  (--cxx-flag, --cuda-flag, nvcc's -Xcompiler; inside response files and
  nvcc's --options-file, $NVCC_APPEND_FLAGS / $NVCC_PREPEND_FLAGS, and GCC's
  -iprefix with -iwithprefix / -iwithprefixbefore), with a header appearing
  where the compiler looks first;
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
* options: -D, -O, --std, --arch;
* a CUDA input's step results under another module id (another module name,
  another directory): never taken, so host and device code name its
  internal symbols alike;
* files flags make the tools read: response files (nested ones too, and the
  linker's), refused when they name a directory.

Then a table: each kind of input edited at each point of a build (before it,
during its lock wait, during its remote lookup, right after the compile,
right after the link) must never leave a library cached under the other
version's key (test_an_edit_at_any_point_never_gives_a_stale_hit).

.cpp kernels with g++ wherever possible; nvcc only for its own variables.
"""

from __future__ import annotations

import fcntl
import hashlib
import http.server
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from support.device_names import device_names, registered_names
from support.kernels import SCALE_ANONYMOUS_CU

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


# --------------------------------------------------------------------------- paths through a linked directory
def source_behind_a_link(d: Path) -> Path:
    """proj/src, a link to ../real/src, whose k.cpp includes "../common/x.h".
    The kernel resolves ".." after the link, so the compiler opens
    real/common/x.h, never proj/common/x.h. Returns proj/src/k.cpp."""
    probe_source(d / "real" / "src" / "k.cpp", "VAL", before='#include "../common/x.h"')
    (d / "proj").mkdir()
    os.symlink("../real/src", d / "proj" / "src")
    return d / "proj" / "src" / "k.cpp"


def make_prereqs(depfile: Path) -> list:
    return depfile.read_text().replace("\\\n", " ").split(":", 1)[1].split()


def test_header_reached_by_dot_dot_after_a_linked_directory(bekc, tmp_path):
    """The header the compiler read through "src/../common/x.h" is keyed:
    editing it misses. A file where the path leads on paper
    (proj/common/x.h) is not keyed, and dependencies.json and --depfile name
    the header read."""
    d = Path(os.path.realpath(bekc.workdir))
    src = source_behind_a_link(d)
    header = write(d / "real" / "common" / "x.h", "#define VAL 1\n")
    decoy = write(d / "proj" / "common" / "x.h", "#define VAL 100\n")
    depfile = tmp_path / "k.d"
    args = (src, FAST, "--depfile", depfile)
    assert probe(bekc.build(*args, env=env())) == 1
    assert bekc.build(*args, env=env()).hit is True
    write(header, "#define VAL 2\n")
    second = miss_then(bekc, *args, expect=2)
    write(decoy, "#define VAL 200\n")  # read by no compiler
    again = bekc.build(*args, env=env())
    assert again.hit is True and probe(again) == 2
    deps = json.loads((second.manifest_path.parent / "dependencies.json").read_text())
    assert str(header) in deps and str(decoy) not in deps, deps
    prereqs = make_prereqs(depfile)
    assert str(header) in prereqs and str(decoy) not in prereqs, prereqs


def test_header_reached_by_dot_dot_after_a_linked_directory_builds(bekc):
    """With nothing where the path leads on paper (proj/common/x.h), the
    build succeeds as g++ does, and the next one hits."""
    d = Path(os.path.realpath(bekc.workdir))
    src = source_behind_a_link(d)
    write(d / "real" / "common" / "x.h", "#define VAL 3\n")
    assert probe(bekc.build(src, FAST, env=env())) == 3
    assert bekc.build(src, FAST, env=env()).hit is True


@pytest.mark.parametrize("spelling", ["quoted", "include_dir", "inside_the_include"])
def test_link_pointed_elsewhere_before_a_dot_dot_is_a_miss(bekc, spelling):
    """A link followed by ".." decides which header the compiler opens: when
    the link is pointed at another tree whose header differs, the next build
    misses and reads that header, whether the ".." is in the source's quoted
    include ("../common/x.h" from a linked source directory), in an -I
    directory written through the link (-I proj/src/../common) or inside the
    include itself ("lnk/../x.h" with lnk a link)."""
    d = Path(os.path.realpath(bekc.workdir))
    for n in (1, 2):
        write(d / f"tree{n}" / "common" / "x.h", f"#define VAL {n}\n")
        (d / f"tree{n}" / "src" / "sub").mkdir(parents=True)
    (d / "proj").mkdir()
    if spelling == "quoted":
        for n in (1, 2):
            probe_source(d / f"tree{n}" / "src" / "k.cpp", "VAL",
                         before='#include "../common/x.h"')
        link, args = d / "proj" / "src", (d / "proj" / "src" / "k.cpp", FAST)
    elif spelling == "include_dir":
        link = d / "proj" / "src"
        args = (probe_source(d / "k.cpp", "VAL", before="#include <x.h>"), FAST,
                "-I", f"{link}/../common")
    else:
        link = d / "lnk"
        args = (probe_source(d / "k.cpp", "VAL", before='#include "lnk/../common/x.h"'), FAST)
    target = "tree{}/src" if spelling == "inside_the_include" else "../tree{}/src"
    os.symlink(target.format(1), link)
    assert probe(bekc.build(*args, env=env())) == 1
    assert bekc.build(*args, env=env()).hit is True
    os.unlink(link)
    os.symlink(target.format(2), link)
    miss_then(bekc, *args, expect=2)
    assert bekc.build(*args, env=env()).hit is True


# --------------------------------------------------------------------------- include directories in compile flags
@pytest.mark.parametrize("flag", [("-I", "inc_a"), ("-Iinc_a",), ("-isystem", "inc_a"),
                                  ("-idirafter", "inc_a"), ("-iquote", "inc_a")])
def test_header_appearing_before_a_cxx_flag_include_directory(bekc, flag):
    """An include directory given by --cxx-flag (relative, as it counts from
    the working directory) is guarded as bekc's own -I is: the same header
    name appearing beside the source (searched first by a quoted include),
    or in bekc's -I directory (searched before every -I, -isystem and
    -idirafter of the flags), is used from then on."""
    d = bekc.workdir
    (d / "first").mkdir()
    write(d / "inc_a" / "val.h", "#define VAL 1\n")
    src = probe_source(d / "src" / "k.cpp", "VAL", before='#include "val.h"')
    args = (src, FAST, "-I", d / "first", *[f"--cxx-flag={w}" for w in flag])
    assert probe(bekc.build(*args, env=env())) == 1
    assert bekc.build(*args, env=env()).hit is True
    write(d / "src" / "val.h", "#define VAL 2\n")
    miss_then(bekc, *args, expect=2)
    (d / "src" / "val.h").unlink()
    assert probe(bekc.build(*args, env=env())) == 1
    if flag[0] != "-iquote":  # searched before bekc's -I
        write(d / "first" / "val.h", "#define VAL 3\n")
        miss_then(bekc, *args, expect=3)


def test_cxx_flag_relative_include_directory_follows_the_working_directory(bekc):
    """--cxx-flag=-Iinc means another directory from another working
    directory."""
    d = bekc.workdir
    write(d / "one" / "inc" / "cfg.h", "#define CFG 1\n")
    write(d / "two" / "inc" / "cfg.h", "#define CFG 2\n")
    src = probe_source(d / "k.cpp", "CFG", before="#include <cfg.h>")
    assert probe(bekc.build(src, FAST, "--cxx-flag=-Iinc", cwd=d / "one", env=env())) == 1
    r = bekc.build(src, FAST, "--cxx-flag=-Iinc", cwd=d / "two", env=env())
    assert r.hit is False and probe(r) == 2


def cu_probe_build(bekc, nvcc, include: Path, flag: tuple) -> tuple:
    """Builds src/k.cu, whose library holds "PROBE<VAL,0,0>" with VAL from
    "val.h" (1 now), with `-I include` and each word of `flag` as a
    --cuda-flag; asserts that the build hits again. Returns its arguments."""
    src = write(bekc.workdir / "src" / "k.cu",
                '#include "val.h"\n#define APPENDED VAL\n' + NVCC_KERNEL)
    args = (src, "--arch", "sm_80", FAST, "--nvcc", nvcc, "-I", include,
            *[f"--cuda-flag={w}" for w in flag])
    assert probe_bytes(bekc.build(*args, env=env()).library) == "1,0,0"
    assert bekc.build(*args, env=env()).hit is True
    return args


def cu_miss_then(bekc, args: tuple, expect: int):
    r = bekc.build(*args, env=env())
    assert r.hit is False, "stale hit: the changed input was not noticed"
    assert probe_bytes(r.library) == f"{expect},0,0", "the library was not built from the new input"


@pytest.mark.parametrize("flag", [("-I", "inc_a"), ("--include-path=inc_a",),
                                  ("-isystem=inc_a",)])
def test_header_appearing_before_a_cuda_flag_include_directory(bekc, nvcc, flag):
    """nvcc's include options in --cuda-flag are guarded as bekc's own -I is:
    beside the source first, then bekc's -I directory."""
    d = bekc.workdir
    write(d / "inc_a" / "val.h", "#define VAL 1\n")
    (d / "first").mkdir()
    args = cu_probe_build(bekc, nvcc, d / "first", flag)
    write(d / "src" / "val.h", "#define VAL 2\n")
    cu_miss_then(bekc, args, expect=2)
    (d / "src" / "val.h").unlink()
    write(d / "first" / "val.h", "#define VAL 3\n")
    cu_miss_then(bekc, args, expect=3)


@pytest.mark.parametrize("flag", [("-Xcompiler=-Iinc_a",), ("-Xcompiler", "-I,inc_a"),
                                  ("--compiler-options=-iquote inc_a",)])
def test_header_appearing_in_a_directory_nvcc_passes_the_host_compiler(bekc, nvcc, flag):
    """nvcc puts what -Xcompiler passes the host compiler before its own -I:
    a header appearing in such an -I (or -iquote, for a quoted include)
    directory shadows one found in bekc's -I directory."""
    d = bekc.workdir
    (d / "inc_a").mkdir()
    write(d / "later" / "val.h", "#define VAL 1\n")
    args = cu_probe_build(bekc, nvcc, d / "later", flag)
    write(d / "inc_a" / "val.h", "#define VAL 2\n")
    cu_miss_then(bekc, args, expect=2)


@pytest.mark.parametrize("flags", [("@flags.rsp",), ("@outer.rsp",),
                                   ("-iprefix", "{d}/", "-iwithprefixbefore", "inc_a"),
                                   ("-iprefix", "{d}/", "-iwithprefix", "inc_a")])
def test_header_appearing_before_an_include_directory_a_cxx_flag_implies(bekc, flags):
    """Include directories inside a response file (GCC's quoting; nested
    ones too) and those -iwithprefixbefore (like -I) and -iwithprefix (like
    -isystem, as g++ reads it) add after -iprefix are guarded as
    --cxx-flag=-I is: the same header name appearing beside the source is
    used from then on."""
    d = bekc.workdir
    write(d / "inc_a" / "val.h", "#define VAL 1\n")
    write(d / "flags.rsp", "-DOTHER=0 '-I' \"inc_a\"\n")
    write(d / "outer.rsp", f"@{d / 'flags.rsp'}\n")
    src = probe_source(d / "src" / "k.cpp", "VAL", before='#include "val.h"')
    args = (src, FAST, *[f"--cxx-flag={w.format(d=d)}" for w in flags])
    assert probe(bekc.build(*args, env=env())) == 1
    assert bekc.build(*args, env=env()).hit is True
    write(d / "src" / "val.h", "#define VAL 2\n")
    miss_then(bekc, *args, expect=2)


@pytest.mark.parametrize("variable, flags", [
    ("NVCC_APPEND_FLAGS=-Iinc_a", ()),
    ("NVCC_PREPEND_FLAGS=-optf opts.txt", ()),
    ("", ("--options-file=opts.txt",)),
    ("", ("-Xcompiler=@host.rsp",)),
])
def test_header_appearing_before_an_include_directory_nvcc_reads_elsewhere(bekc, nvcc, variable,
                                                                           flags):
    """Include directories nvcc reads from $NVCC_APPEND_FLAGS /
    $NVCC_PREPEND_FLAGS, from an --options-file (-optf), and those the host
    compiler reads from a response file -Xcompiler passes it, are guarded as
    --cuda-flag=-I is: the same header name appearing beside the source is
    used from then on."""
    d = bekc.workdir
    write(d / "inc_a" / "val.h", "#define VAL 1\n")
    write(d / "opts.txt", "-I inc_a\n")
    write(d / "host.rsp", "-Iinc_a\n")
    name, _, value = variable.partition("=")
    e = env(**{name: value}) if name else env()
    src = write(d / "src" / "k.cu", '#include "val.h"\n#define APPENDED VAL\n' + NVCC_KERNEL)
    args = (src, "--arch", "sm_80", FAST, "--nvcc", nvcc, *[f"--cuda-flag={w}" for w in flags])
    assert probe_bytes(bekc.build(*args, env=e).library) == "1,0,0"
    assert bekc.build(*args, env=e).hit is True
    write(d / "src" / "val.h", "#define VAL 2\n")
    r = bekc.build(*args, env=e)
    assert r.hit is False, "stale hit: the changed input was not noticed"
    assert probe_bytes(r.library) == "2,0,0", "the library was not built from the new input"


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
    assert probe(bekc.build(*args, env=env())) == 11
    assert bekc.build(*args, env=env()).hit is True
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


# --------------------------------------------------------------------------- edits during a build
# Every kind of input the key covers, edited at every point of a build where a
# user could save a file: before the build, while it waits for another
# build's lock, during the remote lookup, right after the compiler read it,
# right after the linker read it. Whatever that build serves, the next builds
# must serve the library of the files as they are: version 2, and after going
# back, version 1. No edit may leave a library cached under the other
# version's key.
#
# Each kind has two versions of its files, prepared up front; an edit is an
# atomic replacement of them (as editors save), done by edit.py, which the
# compile and link hooks (a --cxx wrapper) and the tests themselves run.

EDIT_SCRIPT = """\
import json, os, shutil, sys
spec = json.load(open(sys.argv[1]))
for path, source in spec.items():
    if source is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(source, path + ".new")
        os.replace(path + ".new", path)
"""

# g++ behind a wrapper that runs the edit once, right after the compile of
# the user's translation unit or after the link ($STALE_EDIT_AT).
HOOKED_CXX = """#!/bin/sh
"{gxx}" "$@"
rc=$?
if [ -n "$STALE_EDIT_AT" ] && [ ! -e "$STALE_EDIT_SPEC.done" ]; then
  compile=no; ours=no
  for a in "$@"; do
    case "$a" in
      -c) compile=yes;;
      *bekc_handlers.cpp|*handler_rt.cpp) ours=yes;;
    esac
  done
  if {{ [ "$STALE_EDIT_AT" = compile ] && [ $compile = yes ] && [ $ours = no ]; }} ||
     {{ [ "$STALE_EDIT_AT" = link ] && [ $compile = no ]; }}; then
    "{python}" "$STALE_EDIT_SCRIPT" "$STALE_EDIT_SPEC" && touch "$STALE_EDIT_SPEC.done"
  fi
fi
exit $rc
"""


class Kind:
    """One kind of input: the build's arguments and environment, and the files
    of version 1 and 2 (path -> file to copy, or None for absent)."""

    def __init__(self, d: Path, args: tuple, env_: dict, versions: dict):
        self.d, self.args, self.env, self.versions = d, args, env_, versions

    def spec(self, version: int) -> Path:
        path = self.d / f"v{version}.json"
        path.write_text(json.dumps({str(k): (str(v) if v else None)
                                    for k, v in self.versions[version].items()}))
        return path


def _versions(d: Path, target: Path, texts: dict) -> dict:
    out = {}
    for v, text in texts.items():
        if text is None:
            out[v] = {target: None}
        else:
            src = write(d / "versions" / f"{target.name}.{v}", text)
            out[v] = {target: src}
    return out


def _kind(name: str, d: Path) -> Kind:
    src = d / "src" / "k.cpp"
    if name == "source":
        return Kind(d, (src,), env(), _versions(d, src, {
            v: PROBE_KERNEL.format(before="", expr=str(v)) for v in (1, 2)}))
    if name in ("quoted header", "-I header", "CPATH header"):
        where = {"quoted header": d / "src", "-I header": d / "inc",
                 "CPATH header": d / "cpath"}[name]
        (d / "inc").mkdir(parents=True, exist_ok=True)
        (d / "cpath").mkdir(parents=True, exist_ok=True)
        include = '"val.h"' if name == "quoted header" else "<val.h>"
        probe_source(src, "VAL", before=f"#include {include}")
        return Kind(d, (src, "-I", d / "inc"), env(CPATH=str(d / "cpath")),
                    _versions(d, where / "val.h", {v: f"#define VAL {v}\n" for v in (1, 2)}))
    if name == "header appearing in an earlier -I directory":
        write(d / "later" / "val.h", "#define VAL 1\n")
        (d / "inc").mkdir(parents=True, exist_ok=True)
        probe_source(src, "VAL", before="#include <val.h>")
        return Kind(d, (src, "-I", d / "inc", "-I", d / "later"), env(),
                    _versions(d, d / "inc" / "val.h", {1: None, 2: "#define VAL 2\n"}))
    if name == "__has_include":
        (d / "inc").mkdir(parents=True, exist_ok=True)
        probe_source(src, "OPT", before=OPTIONAL.format(name="<opt.h>"))
        return Kind(d, (src, "-I", d / "inc"), env(),
                    _versions(d, d / "inc" / "opt.h", {1: None, 2: "#define OPT 2\n"}))
    if name == "response file":
        probe_source(src, "VAL")
        rsp = d / "flags.rsp"
        return Kind(d, (src, f"--cxx-flag=@{rsp}"), env(),
                    _versions(d, rsp, {v: f"-DVAL={v}\n" for v in (1, 2)}))
    if name == "static library":
        linked_source(src)
        lib = d / "libs" / "libfoo.a"
        versions = {}
        for v in (1, 2):
            built = static_library(d / "versions" / f"v{v}" / "libfoo.a", v)
            versions[v] = {lib: built}
        lib.parent.mkdir(parents=True, exist_ok=True)
        return Kind(d, (src, f"--ldflag={lib}"), env(), versions)
    raise AssertionError(name)


KINDS = ["source", "quoted header", "-I header", "CPATH header",
         "header appearing in an earlier -I directory", "__has_include", "response file",
         "static library"]
POINTS = ["before", "lock wait", "remote lookup", "compile", "link"]


class EditingRemote:
    """A remote cache that runs `edit` on its first request, then answers 404
    to every GET and accepts every PUT."""

    def __init__(self, edit):
        self.edit, self.edited = edit, False
        remote = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, code):
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                if not remote.edited:
                    remote.edited = True
                    remote.edit()
                self._answer(404)

            def do_PUT(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self._answer(200)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/bekc"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def direct_key(bekc, args, env_) -> str:
    """The direct key a build of `args` would take the lock of: the SHA-256 of
    the record `--explain-key` prints (store/key.cpp)."""
    proc = bekc.run("build", *args, "--cache-dir", bekc.cache_dir, "--dry-run", "--explain-key",
                    env=env_)
    assert proc.returncode == 0, proc.stderr
    record = []
    for line in proc.stdout.splitlines(keepends=True):
        if not re.match(r"\d+:", line):
            break
        record.append(line)
    return hashlib.sha256("".join(record).encode()).hexdigest()


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("kind", KINDS)
def test_an_edit_at_any_point_never_gives_a_stale_hit(bekc, tmp_path, kind, point):
    d = bekc.workdir
    k = _kind(kind, d)
    edit_py = write(tmp_path / "edit.py", EDIT_SCRIPT)
    cxx = write(tmp_path / "bin" / "hooked-g++", HOOKED_CXX.format(gxx=gxx(), python=sys.executable))
    cxx.chmod(cxx.stat().st_mode | stat.S_IXUSR)

    def set_version(v):
        subprocess.run([sys.executable, str(edit_py), str(k.spec(v))], check=True)

    args = (*k.args, FAST, "--cxx", cxx)
    set_version(1)
    assert probe(bekc.build(*args, env=k.env)) == 1
    # A version 1 of another module in the same cache: its key must not be
    # reused for version 2 after the edit (it is what "going back" hits).
    spec2 = k.spec(2)
    e = dict(k.env)
    if point == "before":
        set_version(2)
        served = bekc.build(*args, env=e)
    elif point in ("compile", "link"):
        # The build starts from a version never built (3 = 2 with another
        # option), so it compiles; the hook switches version 1 to 2 mid-build.
        e.update(STALE_EDIT_AT=point, STALE_EDIT_SPEC=str(spec2), STALE_EDIT_SCRIPT=str(edit_py))
        served = bekc.build(*args, "-D", "UNRELATED=1", env=e)
        assert Path(str(spec2) + ".done").exists(), "the hook never ran"
    elif point == "remote lookup":
        remote = EditingRemote(lambda: set_version(2))
        try:
            served = bekc.build(*args, "-D", "UNRELATED=1", "--remote-cache", remote.url, env=e)
        finally:
            remote.stop()
        assert remote.edited, "bekc never asked the remote"
    else:  # lock wait
        run_args = (*args, "-D", "UNRELATED=1")
        key = direct_key(bekc, run_args, e)
        lock = bekc.cache_dir / "locks" / key[:2] / f"{key[2:]}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            proc = subprocess.Popen(bekc.build_argv(*run_args, "-v"), cwd=d, env=e,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            waited = []
            for line in proc.stderr:
                waited.append(line)
                if "cache miss" in line:
                    break
            time.sleep(0.2)  # past the miss line: in its lock wait
            set_version(2)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, "".join(waited) + err
        assert any("cache miss" in l for l in waited), "".join(waited) + err
        served = None
    if served is not None:
        # What that build served is one version or the other, whole.
        assert probe(served) in (1, 2)
    now = bekc.build(*args, "-D", "UNRELATED=1", env=k.env)
    assert probe(now) == 2, f"stale hit after an edit {point}: {kind} at version 2 served version 1"
    assert probe(bekc.build(*args, env=k.env)) == 2
    set_version(1)
    back = bekc.build(*args, "-D", "UNRELATED=1", env=k.env)
    assert probe(back) == 1, f"stale hit after an edit {point}: back at version 1 served version 2"
    assert probe(bekc.build(*args, env=k.env)) == 1


def test_cuda_step_results_never_mix_module_ids(bekc, nvcc, tmp_path):
    """A split CUDA compile's cudafe++ (whose output names the host code's
    symbols) and cicc (the device code's) read the module id bekc writes for
    the input, and their step results are keyed by its bytes: the same
    source under another module name, or in another directory, takes no
    result compiled under the other id. Each library's host code registers
    its anonymous namespace's kernel under the name its device code has, and
    the names differ from library to library."""
    e = env(BEKC_SPLIT_NVCC="1")
    names = []
    for d, module in (("a", "scale_one"), ("a", "scale_two"), ("b", "scale_one")):
        (bekc.workdir / d).mkdir(exist_ok=True)
        (bekc.workdir / d / "scale.h").write_text("#define SCALE 2.0f\n")
        (bekc.workdir / d / "scale.cu").write_text(SCALE_ANONYMOUS_CU)
        built = bekc.build(bekc.workdir / d / "scale.cu", "--name", module, "--arch", "80", FAST,
                           env=e)
        device = device_names(built.library, tmp_path)
        registered = {n for n in registered_names(built.library, tmp_path) if "scale_kernel" in n}
        assert registered and registered <= device, (module, registered, device)
        names.append(device)
    assert not (names[0] & names[1] or names[0] & names[2] or names[1] & names[2]), names


# --------------------------------------------------------------------------- files flags make the tools read
def test_nested_response_file_edit(bekc):
    """A response file named inside another (as GCC expands them) is keyed
    too; so is a linker's response file."""
    d = bekc.workdir
    write(d / "inner.rsp", "-DVAL=1\n")
    write(d / "outer.rsp", f"-DOTHER=0 '@{d / 'inner.rsp'}'\n")
    lib = static_library(d / "libs" / "libfoo.a", 10)
    write(d / "link.rsp", f"{lib}\n")
    src = probe_source(d / "k.cpp", "VAL + bekc_foo()", before="int bekc_foo();")
    args = (src, FAST, f"--cxx-flag=@{d / 'outer.rsp'}", f"--ldflag=@{d / 'link.rsp'}")
    assert probe(bekc.build(*args, env=env())) == 11
    assert bekc.build(*args, env=env()).hit is True
    write(d / "inner.rsp", "-DVAL=2\n")
    miss_then(bekc, *args, expect=12)
    lib20 = static_library(d / "other" / "libfoo.a", 20)
    write(d / "link.rsp", f"{lib20}\n")
    miss_then(bekc, *args, expect=22)


# The value of `bekc_asm_val` comes from the assembler's `--defsym`.
_ASM_VALUE = ('extern "C" const int bekc_asm_val;\n'
              'asm(".pushsection .rodata\\n.globl bekc_asm_val\\n.p2align 2\\n"\n'
              '    "bekc_asm_val: .long BEKC_AS_VAL\\n.popsection");')


@pytest.mark.parametrize("flags", [("--cxx-flag=-Wa,@{rsp}",),
                                   ("--cxx-flag=-Xassembler", "--cxx-flag=@{rsp}"),
                                   ("--cxx-flag=-Wa,-g,@{rsp}",)],
                         ids=["-Wa,@FILE", "-Xassembler @FILE", "inside a longer -Wa, list"])
def test_assembler_response_file_edit(bekc, flags):
    """A response file handed to the assembler (inside a `-Wa,` list or after
    `-Xassembler`) is keyed by its bytes: editing it is a miss."""
    d = bekc.workdir
    rsp = write(d / "as.rsp", "--defsym=BEKC_AS_VAL=1\n")
    src = probe_source(d / "k.cpp", "bekc_asm_val", before=_ASM_VALUE)
    args = (src, FAST, *(f.format(rsp=rsp) for f in flags))
    assert probe(bekc.build(*args, env=env())) == 1
    assert bekc.build(*args, env=env()).hit is True
    write(rsp, "--defsym=BEKC_AS_VAL=2\n")
    miss_then(bekc, *args, expect=2)


def test_a_flag_naming_a_directory_is_refused(bekc):
    d = bekc.workdir
    (d / "profiles").mkdir()
    src = probe_source(d / "k.cpp", "1")
    r = bekc.build(src, FAST, "--cxx-flag=-fprofile-use=profiles", ok=False)
    assert r.rc == 2
    assert r.stderr == (
        "bekc: error: '-fprofile-use=profiles' makes the compiler read a file bekc must key: "
        f"cannot read {d / 'profiles'}: it is a directory; name a regular file, or pass its "
        "flags directly\n")
