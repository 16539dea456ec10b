"""Failing builds: what the user sees and the exit code (SPEC §1.3, §4).

Exit codes: 0 success, 1 the user's code or spec is wrong (a compiler that ran
and failed), 2 usage error, 3 toolchain missing (a compiler that cannot run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FAST = "-O0"
REPO = Path(__file__).resolve().parents[2]


def errors_in(stderr: str, path: Path):
    """Compiler error lines that point into `path` (g++ `f:12:5: error`, nvcc `f(12): error`)."""
    p = re.escape(str(path))
    return re.findall(rf"{p}(?::(\d+):\d+:|\((\d+)\):) (?:fatal )?error", stderr)


# --------------------------------------------------------------------------- source errors
def test_function_defined_in_two_inputs_names_both_places(bekc, kernels):
    a = kernels.cpp(bekc.workdir / "a.cpp", fn="twice")
    b = kernels.cpp(bekc.workdir / "b.cpp", fn="twice")
    r = bekc.build(a, b, FAST, "--name", "dup", ok=False)
    assert r.rc == 1
    assert "twice" in r.stderr
    # Both places: the second definition's file:line and the first one's.
    assert re.search(r"b\.cpp:3\b", r.stderr), r.stderr
    assert re.search(r"a\.cpp:3\b", r.stderr), r.stderr
    assert bekc.entries() == []


def test_cpp_compile_error_points_at_the_users_file_and_line(bekc, kernels):
    src = kernels.text(bekc.workdir / "broken.cpp", """\
        #include "brainevent/common.h"
        // @BE f
        void f(const BE::Tensor x, BE::Tensor out) {
            int y = not_declared_anywhere;
        }
        """)
    r = bekc.build(src, FAST, ok=False)
    assert r.rc == 1
    assert "not_declared_anywhere" in r.stderr
    assert errors_in(r.stderr, src) == [("4", "")], r.stderr
    assert bekc.entries() == []


def test_cuda_compile_error_points_at_the_users_file_and_line(bekc, kernels, nvcc):
    src = kernels.text(bekc.workdir / "broken.cu", """\
        #include "brainevent/common.h"
        __global__ void k(float* x) { x[0] = 1.0f; }
        // @BE f
        void f(const BE::Tensor x, BE::Tensor out, int64_t stream) {
            k<<<1, 1, 0, (cudaStream_t)stream>>>(not_declared_on_device);
        }
        """)
    r = bekc.build(src, "--arch", "sm_90", FAST, ok=False)
    assert r.rc == 1
    assert "not_declared_on_device" in r.stderr
    lines = [a or b for a, b in errors_in(r.stderr, src)]
    assert lines and set(lines) == {"5"}, r.stderr


def many_errors_source(n: int) -> str:
    body = "\n".join(f"    int a{i} = undefined_{i};" for i in range(n))
    return ('#include "brainevent/common.h"\n// @BE f\n'
            f"void f(const BE::Tensor x, BE::Tensor out) {{\n{body}\n}}\n")


def test_long_error_log_is_trimmed_without_v_and_complete_with_v(bekc, kernels):
    src = kernels.text(bekc.workdir / "many.cpp", many_errors_source(30))
    short = bekc.build(src, FAST, ok=False)
    assert short.rc == 1
    shown = {int(a) for a, _ in errors_in(short.stderr, src)}
    assert 4 in shown, "the first error must be shown"
    assert 1 <= len(shown) <= 10, short.stderr
    assert "-v" in short.stderr and "more lines" in short.stderr
    assert len(short.stderr.splitlines()) < 60

    full = bekc.run("build", src, FAST, "-v", "--cache-dir", bekc.cache_dir)
    assert full.returncode == 1
    every = {int(a) for a, _ in errors_in(full.stderr, src)}
    assert every == set(range(4, 34)), full.stderr
    assert "more lines" not in full.stderr


def test_verbose_prints_every_command(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    proc = bekc.run("build", src, FAST, "-v", "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"\S*(g\+\+|c\+\+|clang\+\+)\S* .*-shared", proc.stderr), proc.stderr
    assert "miss" in proc.stderr


@pytest.mark.parametrize("suffix", ["cpp", "cu"])
def test_wrong_inline_spec_fails_with_annotation_line_and_both_types(bekc, kernels, suffix,
                                                                     request):
    if suffix == "cu":
        request.getfixturevalue("nvcc")
    stream = ", int64_t stream" if suffix == "cu" else ""
    spec_stream = " stream" if suffix == "cu" else ""
    src = kernels.text(bekc.workdir / f"spec.{suffix}", f"""\
        #include "brainevent/common.h"

        // @BE scale arg ret attr.x:float64{spec_stream}
        void scale(const BE::Tensor a, BE::Tensor out, float x{stream}) {{}}
        """)
    args = [src, FAST] + (["--arch", "sm_90"] if suffix == "cu" else [])
    r = bekc.build(*args, ok=False)
    assert r.rc == 1
    # The annotation's file:line (line 3), in either compiler's style.
    assert re.search(rf"spec\.{suffix}(:3\b|\(3\))", r.stderr), r.stderr
    # Expected and actual parameter types.
    assert "double" in r.stderr and "float" in r.stderr, r.stderr
    assert bekc.entries() == []


# --------------------------------------------------------------------------- usage errors
USAGE_CASES = {
    "no input": [],
    "unknown option": ["{src}", "--no-such-option"],
    "missing input": ["{work}/missing.cpp"],
    "not a kernel source": ["{work}/notes.txt"],
    "empty directory": ["{work}/emptydir"],
    "bad opt level": ["{src}", "-O9"],
    "opt level twice": ["{src}", "-O1", "-O2"],
    "bad module name": ["{src}", "--name", "not/a-file-name"],
    "bad target prefix": ["{src}", "--target-prefix", "a\nb"],
    "bad --function": ["{src}", "--function", "=arg"],
}


@pytest.mark.parametrize("case", list(USAGE_CASES))
def test_usage_errors_exit_2(bekc, kernels, case):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    (bekc.workdir / "notes.txt").write_text("hello")
    (bekc.workdir / "emptydir").mkdir()
    args = [a.format(src=src, work=bekc.workdir) for a in USAGE_CASES[case]]
    proc = bekc.run("build", *args, "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 2, f"{case}: exit {proc.returncode}\n{proc.stderr}"
    assert proc.stderr.strip(), "a usage error must say what is wrong"
    assert proc.stdout.strip() == ""


def test_bad_arch_exits_2(bekc, kernels, nvcc):
    cu = kernels.cu(bekc.workdir / "k.cu")
    proc = bekc.run("build", cu, "--arch", "sm_9x", "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 2
    assert "sm_9x" in proc.stderr


def test_help_and_version_exit_0(bekc):
    for args in (["--help"], ["build", "--help"], ["cache", "--help"], ["--version"]):
        proc = bekc.run(*args)
        assert proc.returncode == 0, args
    assert "Exit codes" in bekc.run("--help").stdout or "Exit codes" in bekc.run(
        "build", "--help").stdout


# --------------------------------------------------------------------------- the language standard
OLDER_STANDARD = (" but bekc's runtime headers need C++17 or later: remove it, or ask for c++17 "
                  "or later (bekc compiles with --std, c++17 by default)\n")


def std_option_refused(value: str, title: str) -> str:
    return (f"bekc: error: --std {value} asks for {title}, but bekc's runtime headers need C++17 "
            "or later: use --std c++17 (the default) or a later standard\n")


# Each way a build can ask for a standard: (input suffix, arguments, the
# variables set, what stderr says in full).
STANDARD_CASES = {
    "--std c++14": ("cpp", ["--std", "c++14"], {}, std_option_refused("c++14", "C++14")),
    "--std=gnu++14": ("cpp", ["--std=gnu++14"], {}, std_option_refused("gnu++14", "C++14")),
    "--std c++11": ("cu", ["--std", "c++11"], {}, std_option_refused("c++11", "C++11")),
    "--std c++1y": ("cpp", ["--std", "c++1y"], {}, std_option_refused("c++1y", "C++14")),
    "--std c11": ("cpp", ["--std", "c11"], {},
                  "bekc: error: --std c11 names no C++ standard: use c++17 (the default), c++20 "
                  "or another of c++17 and later\n"),
    "--cxx-flag=-std=c++14": (
        "cpp", ["--cxx-flag=-std=c++14"], {},
        "bekc: error: --cxx-flag=-std=c++14 (extra_cflags from Python) asks for C++14,"
        + OLDER_STANDARD),
    "--cxx-flag=--std=c++14": (
        "cpp", ["--cxx-flag=--std=c++14"], {},
        "bekc: error: --cxx-flag=--std=c++14 (extra_cflags from Python) asks for C++14,"
        + OLDER_STANDARD),
    "--cxx-flag=-ansi": (
        "cpp", ["--cxx-flag=-ansi"], {},
        "bekc: error: --cxx-flag=-ansi (extra_cflags from Python) asks for C++98," + OLDER_STANDARD),
    "nvcc's -std c++14": (
        "cu", ["--cuda-flag=-std", "--cuda-flag=c++14"], {},
        "bekc: error: --cuda-flag=-std --cuda-flag=c++14 (extra_cuda_cflags from Python) asks for "
        "C++14," + OLDER_STANDARD),
    "-Xcompiler": (
        "cu", ["--cuda-flag=-Xcompiler", "--cuda-flag=-O2,-std=gnu++14"], {},
        "bekc: error: --cuda-flag=-Xcompiler --cuda-flag=-O2,-std=gnu++14 (extra_cuda_cflags from "
        "Python) asks for C++14," + OLDER_STANDARD),
    "a response file": (
        "cpp", ["--cxx-flag=@std.rsp"], {},
        "bekc: error: --cxx-flag=@std.rsp (extra_cflags from Python), through the response file "
        "std.rsp, asks for C++14," + OLDER_STANDARD),
    "$NVCC_APPEND_FLAGS": (
        "cu", [], {"NVCC_APPEND_FLAGS": "-lineinfo --std=c++14"},
        "bekc: error: --std=c++14 in $NVCC_APPEND_FLAGS asks for C++14," + OLDER_STANDARD),
}


@pytest.mark.parametrize("case", list(STANDARD_CASES))
def test_a_standard_older_than_cxx17_is_one_usage_error(bekc, kernels, case):
    """bekc's runtime headers need C++17: a build that asks for an older
    standard, anywhere a compiler would read it, stops before compiling with
    one line that says where the standard came from and what to do (exit 2),
    whether or not the compilers are installed."""
    suffix, args, variables, expected = STANDARD_CASES[case]
    src = (kernels.cpp(bekc.workdir / "k.cpp") if suffix == "cpp"
           else kernels.cu(bekc.workdir / "k.cu"))
    (bekc.workdir / "std.rsp").write_text("-O2 -std=c++14\n")
    env = {k: v for k, v in os.environ.items() if k != "BEKC_CACHE_DIR"}
    env.update(variables)
    proc = bekc.run("build", src, "--arch", "sm_90", *args, "--cache-dir", bekc.cache_dir, env=env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", expected)
    assert not (bekc.cache_dir / "runtime").exists(), "nothing may compile"


def test_a_standard_from_pythons_extra_cflags_names_them(bekc, kernels):
    """The loaders hand extra_cflags and extra_cuda_cflags to bekc as
    --cxx-flag and --cuda-flag: the error names both spellings."""
    sys.path.insert(0, str(REPO / "python"))
    from bekc import build_argv

    src = kernels.cpp(bekc.workdir / "k.cpp")
    argv = build_argv([src], name="k", flag_kind="cxx", extra_flags=["-std=c++14"],
                      cache_dir=str(bekc.cache_dir), binary=str(bekc.binary))
    proc = subprocess.run(argv, cwd=bekc.workdir, capture_output=True, text=True)
    assert (proc.returncode, proc.stderr) == (
        2, "bekc: error: --cxx-flag=-std=c++14 (extra_cflags from Python) asks for C++14,"
        + OLDER_STANDARD)


def test_a_compile_error_in_bekcs_own_code_is_exit_1_not_3(bekc, kernels, tmp_path):
    """A header that the compiler's environment puts ahead of the system's
    breaks bekc's own handler code: the compiler ran and failed, which is a
    compile error (exit 1), not a missing toolchain (exit 3). Of the compiles
    that fail, the one that started first is reported, whichever ends first."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    # Only bekc/handler.h includes <cstdarg>: the kernel itself compiles.
    (shadow / "cstdarg").write_text("#error cstdarg is shadowed by CPATH\n")
    src = kernels.cpp(bekc.workdir / "k.cpp")
    env = {k: v for k, v in os.environ.items() if k != "BEKC_CACHE_DIR"}
    env["CPATH"] = str(shadow)
    r = bekc.build(src, FAST, ok=False, env=env)
    assert r.rc == 1, r.describe()
    assert "cstdarg is shadowed by CPATH" in r.stderr
    assert "handler support code" in r.stderr
    assert ("note: bekc compiles it with the host compiler, --std and the compiler's environment "
            "($CPATH, $CPLUS_INCLUDE_PATH, $GCC_EXEC_PREFIX, ...)") in r.stderr


# --------------------------------------------------------------------------- toolchain
def test_missing_nvcc_exits_3_and_says_how_to_fix(bekc, kernels):
    cu = kernels.cu(bekc.workdir / "k.cu")
    proc = bekc.run("build", cu, "--arch", "sm_90", "--nvcc", "/nonexistent/nvcc",
                    "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 3, proc.stderr
    assert "/nonexistent/nvcc" in proc.stderr


def test_missing_host_compiler_exits_3(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    proc = bekc.run("build", src, "--cxx", "/nonexistent/g++", "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 3, proc.stderr
    assert "/nonexistent/g++" in proc.stderr and "--cxx" in proc.stderr


def test_cxx_from_the_environment_is_used_and_keyed(bekc, kernels):
    clang = shutil.which("clang++")
    if clang is None:
        pytest.skip("no clang++ to choose through $CXX")
    src = kernels.cpp(bekc.workdir / "k.cpp")
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "BEKC_CACHE_DIR")}
    default = bekc.build(src, FAST, env=env)
    env["CXX"] = clang
    chosen = bekc.build(src, FAST, env=env)
    assert chosen.hit is False, "another compiler must not hit the first one's entry"
    # Run by the path found, symlinks kept (a compiler may act by its name).
    assert chosen.manifest["toolchain"]["cxx"]["path"] == str(Path(clang).absolute())
    assert chosen.key != default.key


def test_ccache_masquerade_directory_on_path(bekc, kernels, tmp_path):
    masq = Path("/usr/lib/ccache")
    if not (masq / "c++").is_symlink():
        pytest.skip("no ccache masquerade directory")
    src = kernels.cpp(bekc.workdir / "k.cpp")
    env = dict(os.environ)
    env.pop("CXX", None)
    env.pop("BEKC_CACHE_DIR", None)
    env["PATH"] = f"{masq}:{env.get('PATH', '/usr/bin:/bin')}"
    env["CCACHE_DIR"] = str(tmp_path / "ccache")
    r = bekc.build(src, FAST, env=env, ok=None)
    assert r.rc == 0, r.describe()
