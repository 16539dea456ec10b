"""Failing builds: what the user sees and the exit code (SPEC §1.3, §4).

Exit codes: 0 success, 1 the user's code or spec is wrong, 2 usage error,
3 toolchain missing.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

FAST = "-O0"


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
