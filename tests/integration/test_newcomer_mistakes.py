"""A newcomer's mistakes, each caught where it is made: messages are
compared as exact text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.kernels import NOOP_CPP

FAST = "-O0"
REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- undefined exports
DECLARED_ONLY = """\
#include "brainevent/common.h"

// @BE vector_add
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t n);
"""


def test_exported_function_never_defined_is_a_link_error_at_the_annotation(bekc, kernels):
    src = kernels.text(bekc.workdir / "kernels.cpp", DECLARED_ONLY)
    r = bekc.build(src, FAST, ok=False)
    assert r.rc == 1
    assert r.stderr == (
        f"{src}:3: error: 'vector_add' is declared here but never defined\n"
        "    // @BE vector_add\n"
        "note: define vector_add(BE::Tensor, BE::Tensor, BE::Tensor, long) in this file, or in "
        "a source or library linked into the module\n"
        "bekc: error: linking libkernels.so failed: an exported function is never defined\n")
    assert bekc.entries() == []
    # Not cached: the second build fails the same way.
    assert bekc.build(src, FAST, ok=False).stderr == r.stderr


def test_exported_cuda_function_never_defined_is_a_link_error(bekc, kernels, nvcc):
    src = kernels.text(bekc.workdir / "kernels.cu", DECLARED_ONLY.replace(
        "int64_t n", "int64_t stream").replace("@BE vector_add", "@BE vector_add arg arg ret stream"))
    r = bekc.build(src, FAST, "--arch", "sm_90", ok=False)
    assert r.rc == 1
    assert f"{src}:3: error: 'vector_add' is declared here but never defined\n" in r.stderr
    assert bekc.entries() == []


def test_helper_never_defined_is_named_in_one_error_and_v_shows_the_linkers_words(bekc, kernels):
    src = kernels.text(bekc.workdir / "helper.cpp", """\
        #include "brainevent/common.h"
        float helper(float);
        // @BE f
        void f(const BE::Tensor x, BE::Tensor out) { helper(1.0f); }
        """)
    r = bekc.build(src, FAST, ok=False)
    assert r.rc == 1
    assert r.stderr == (
        "bekc: error: linking libhelper.so failed: undefined symbol helper(float) (defined in no "
        "source of the module)\n"
        "note: define helper(float) in a source of the module, or link the library that defines "
        "it with --ldflag=-lNAME (extra_ldflags=[\"-lNAME\"] from Python)\n"
        "note: rerun with -v to see the linker's own output\n")
    assert bekc.entries() == []
    verbose = bekc.run("build", src, FAST, "-v", "--cache-dir", bekc.cache_dir)
    assert verbose.returncode == 1
    assert "undefined reference to `helper(float)'" in verbose.stderr
    assert "note: rerun with -v" not in verbose.stderr


OPENMP_CPP = """\
#include <omp.h>
#include "brainevent/common.h"
// @BE threads
void threads(const BE::Tensor x, BE::Tensor out) { (void)omp_get_max_threads(); }
"""


def test_a_library_never_linked_is_named_with_the_flag_that_links_it(bekc, kernels):
    """A module linked without the library its code calls fails the link
    (bekc links with --no-undefined): one error names the symbols and the
    library, and the note's flag builds it."""
    src = kernels.text(bekc.workdir / "threads.cpp", OPENMP_CPP)
    r = bekc.build(src, FAST, ok=False)
    assert (r.rc, r.stderr) == (1,
        "bekc: error: linking libthreads.so failed: undefined symbol omp_get_max_threads "
        "(OpenMP)\n"
        "note: link OpenMP with --ldflag=-fopenmp (extra_ldflags=[\"-fopenmp\"] from Python)\n"
        "note: rerun with -v to see the linker's own output\n")
    bekc.build(src, FAST, "--ldflag=-fopenmp")


CUBLAS_CU = """\
#include <cublas_v2.h>
#include "brainevent/common.h"
// @BE gemm arg ret stream
void gemm(const BE::Tensor a, BE::Tensor out, int64_t stream) {
    cublasHandle_t h;
    cublasCreate(&h);
    cublasSetStream(h, (cudaStream_t)stream);
    float one = 1.0f;
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, nullptr, 1, nullptr, 1, &one,
                nullptr, 1);
    cublasDestroy(h);
}
"""


def test_cublas_never_linked_names_cublas_and_both_fixes_work(bekc, kernels, nvcc):
    """The linker's lines name bekc's private build directory; the error
    names the missing cuBLAS functions, a few and how many more, and how to
    link cuBLAS from the CLI and from Python. Both fixes build the module."""
    src = kernels.text(bekc.workdir / "gemm.cu", CUBLAS_CU)
    r = bekc.build(src, FAST, "--arch", "sm_90", ok=False)
    assert (r.rc, r.stderr) == (1,
        "bekc: error: linking libgemm.so failed: undefined symbols cublasCreate_v2, "
        "cublasSetStream_v2, cublasSgemm_v2 and 1 more (cuBLAS)\n"
        "note: link cuBLAS with --ldflag=-lcublas (extra_ldflags=[\"-lcublas\"] from Python)\n"
        "note: rerun with -v to see the linker's own output\n")
    verbose = bekc.run("build", src, FAST, "--arch", "sm_90", "-v", "--cache-dir", bekc.cache_dir)
    assert "undefined reference to `cublasDestroy_v2'" in verbose.stderr
    bekc.build(src, FAST, "--arch", "sm_90", "--ldflag=-lcublas")
    # Python's extra_ldflags reach a CUDA link as --linker-arg (-Xlinker).
    bekc.build(src, FAST, "--arch", "sm_90", "--linker-arg=-lcublas")


# --------------------------------------------------------------------------- module names
def test_module_name_from_a_file_name_with_a_dash(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "my-kernels.cpp", fn="scale")
    r = bekc.build(src, FAST)
    assert r.manifest["name"] == "my-kernels"
    assert [t["name"] for t in r.manifest["targets"]] == ["my-kernels.scale"]
    assert r.library.name == "libmy-kernels.so" and r.manifest["library"] == "libmy-kernels.so"


def test_module_name_is_mapped_to_a_safe_file_name(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp", fn="scale")
    r = bekc.build(src, FAST, "--name", "my kernels (v2)")
    assert [t["name"] for t in r.manifest["targets"]] == ["my kernels (v2).scale"]
    assert r.library.name == "libmy_kernels__v2_.so"


@pytest.mark.parametrize("name,origin,problem", [
    ("a/b", " ", "contains '/'"),
    ("..", " ", "is a directory name"),
    ("tab\there", " ", "contains a control character"),
])
def test_module_names_that_cannot_name_a_file_are_refused(bekc, kernels, name, origin, problem):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    r = bekc.build(src, FAST, "--name", name, ok=False)
    assert r.rc == 2
    shown = name.replace("\t", "\\011")
    assert r.stderr == (f"bekc: error: module name '{shown}'{origin}{problem}; choose another "
                        f"with --name\n")


def test_a_refused_stem_says_it_came_from_the_file_name(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "bad\x01name.cpp")
    r = bekc.build(src, FAST, ok=False)
    assert r.rc == 2
    assert r.stderr == ("bekc: error: module name 'bad\\001name' (the first input's file name) "
                        "contains a control character; choose another with --name\n")


# --------------------------------------------------------------------------- compiler errors
MISSING_HEADER = """\
#include "brainevent/common.h"
#include "missing.h"
// @BE f arg ret stream
void f(const BE::Tensor x, BE::Tensor out, int64_t stream) {}
"""

HEADER_NOTE = ("note: 'missing.h' is not on the include path: add the directory that holds it "
               "with -I DIR (extra_include_paths=[DIR] from Python)\n")


def missing_header_report(src):
    """The whole of stderr: the compiler's message once, at the user's line, and the note."""
    return (f"{src}:2:10: fatal error: missing.h: No such file or directory\n"
            '    2 | #include "missing.h"\n'
            "      |          ^~~~~~~~~~~\n"
            "compilation terminated.\n" + HEADER_NOTE +
            "bekc: error: compilation failed (exited with code 1)\n")


def test_missing_header_in_cuda_is_reported_once_with_a_note(bekc, kernels, nvcc):
    src = kernels.text(bekc.workdir / "m.cu", MISSING_HEADER)
    r = bekc.build(src, FAST, "--arch", "sm_90", ok=False)
    assert r.rc == 1
    assert r.stderr == missing_header_report(src)


def test_missing_header_in_cpp_is_reported_at_the_users_line(bekc, kernels):
    src = kernels.text(bekc.workdir / "m.cpp", MISSING_HEADER.replace(" arg ret stream", "")
                       .replace(", int64_t stream", ""))
    r = bekc.build(src, FAST, ok=False)
    assert r.rc == 1
    assert r.stderr == missing_header_report(src)


# --------------------------------------------------------------------------- the command line
@pytest.mark.parametrize("args,message", [
    (["build", "k.cu", "--fastmath"],
     "bekc: error: unknown option '--fastmath'; did you mean --fast-math?\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "k.cu", "--zzzzzz"],
     "bekc: error: unknown option '--zzzzzz'\nRun 'bekc build --help' for its options.\n"),
    (["biuld", "x.cu"],
     "bekc: error: unknown command 'bekc biuld'; did you mean 'bekc build'?\n"
     "The commands of bekc are build, inspect, cache, doctor, config, replay, pack, completion "
     "and man.\n"),
    (["cache", "lss"],
     "bekc: error: unknown command 'bekc cache lss'; did you mean 'bekc cache ls'?\n"
     "The commands of bekc cache are path, ls, clear, stats, prune, verify, max-size and packs.\n"),
    ([],
     "bekc: error: bekc needs a command\nThe commands of bekc are build, inspect, cache, doctor, "
     "config, replay, pack, completion and man; run 'bekc --help' for what each does.\n"),
    (["build"],
     "bekc: error: bekc build needs at least one input\n"
     "usage: bekc build [OPTIONS] INPUT...\n"
     "example: bekc build kernels.cu -O3 --fast-math\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "-O3", "--name", "m"],
     "bekc: error: bekc build needs at least one input\n"
     "usage: bekc build [OPTIONS] INPUT...\n"
     "example: bekc build kernels.cu -O3 --fast-math\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "k.cu", "-03"],
     "bekc: error: unknown option '-03'; did you mean -O3?\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "-00", "k.cu"],
     "bekc: error: unknown option '-00'; did you mean -O0?\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "k.cu", "--03"],
     "bekc: error: unknown option '--03'; did you mean -O3?\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "k.cu", "--O2"],
     "bekc: error: unknown option '--O2'; did you mean -O2?\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "k.cu", "-0O"],
     "bekc: error: unknown option '-0O'; did you mean -O0?\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "k.cu", "-0"],
     "bekc: error: unknown option '-0'; did you mean -O?\n"
     "Run 'bekc build --help' for its options.\n"),
    (["build", "---"], "---: error: no such file or directory\n"),
    (["build", "-fast-math", "k.cu"],
     "bekc: error: unknown option '-fast-math'; did you mean --fast-math?\n"
     "Run 'bekc build --help' for its options.\n"),
], ids=["option", "option-far", "command", "cache-command", "no-command", "build-bare",
        "build-no-inputs", "zero-for-O", "zero-zero", "double-dash-zero", "double-dash-O",
        "zero-then-O", "zero-alone", "dashes-only", "one-dash-long"])
def test_usage_errors_say_what_to_type(bekc, args, message):
    r = bekc.run(*args)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", message)


def test_an_input_named_like_an_option_is_still_an_input(bekc, kernels):
    """A file that exists is an input, whatever its name looks like."""
    kernels.cpp(bekc.workdir / "-03")
    for args in (["-03"], ["--", "-03"]):
        r = bekc.run("inspect", *args)
        assert r.stderr == "-03: error: not a kernel source (expected .cu, .cpp, .cc or .cxx)\n"


# --------------------------------------------------------------------------- small things
def test_verbose_force_says_why_it_missed(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    bekc.build(src, FAST)
    r = bekc.build(src, FAST, "-v", "--force")
    misses = [l for l in r.stderr.splitlines() if "cache miss" in l]
    assert misses == ["bekc: cache miss: --force"], r.stderr


def test_cache_ls_counts_in_the_singular(bekc, kernels):
    bekc.build(kernels.cpp(bekc.workdir / "k.cpp"), FAST)
    out = bekc.cache("ls").stdout.splitlines()
    assert len(out) == 2 and "   1 target   " in out[0], out
    assert out[1].startswith("1 entry ("), out


def test_cli_md_lists_every_command(bekc):
    help_text = bekc.run("--help").stdout
    listed = (REPO / "docs" / "cli.md").read_text().split("## Inputs")[0]
    section = help_text.split("Subcommands:")[1].split("Exit codes:")[0]
    commands = [line.split()[0] for line in section.splitlines() if line.strip()]
    assert commands and all(f"bekc {c} " in listed for c in commands), (commands, listed)


# --------------------------------------------------------------------------- warnings
NO_STREAM = NOOP_CPP  # its export `f` has no stream parameter


def test_cuda_export_without_a_stream_is_warned_at_the_annotation(bekc, kernels, nvcc):
    src = kernels.text(bekc.workdir / "ns.cu", NO_STREAM)
    r = bekc.build(src, FAST, "--arch", "sm_90")
    assert r.stderr == (
        f"{src}:2: warning: function 'f' has no 'stream' parameter, so its kernels launch on the "
        "default stream, not on XLA's\n"
        "    // @BE f\n"
        "note: add 'stream' to the spec and an int64_t stream parameter, and launch with "
        "<<<grid, block, 0, (cudaStream_t)stream>>>; if the default stream is meant, build "
        "with --allow-default-stream\n")
    quiet = bekc.build(src, FAST, "--arch", "sm_90", "--allow-default-stream")
    assert quiet.stderr == "" and quiet.hit


def test_cpp_export_without_a_stream_is_not_warned(bekc, kernels):
    r = bekc.build(kernels.text(bekc.workdir / "ns.cpp", NO_STREAM), FAST)
    assert r.stderr == ""


def test_include_directory_that_does_not_exist_is_warned(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    (bekc.workdir / "afile").write_text("")
    r = bekc.build(src, FAST, "-I", "nowhere", "-I", "afile", "-I", ".")
    assert r.stderr == (
        f"bekc: warning: include directory 'nowhere' (-I, extra_include_paths) does not exist: "
        f"{bekc.workdir / 'nowhere'}\n"
        f"bekc: warning: include directory 'afile' (-I, extra_include_paths) is not a "
        f"directory: {bekc.workdir / 'afile'}\n")


# --------------------------------------------------------------------------- cache errors
WAY_OUT = ("; choose another with --cache-dir DIR, $BEKC_CACHE_DIR=DIR, or bekc.set_cache_dir(DIR) "
           "from Python\n")


def test_unusable_cache_dir_names_the_cache_and_the_ways_out(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    blocker = bekc.workdir / "a-file"
    blocker.write_text("")
    r = bekc.build(src, FAST, cache_dir=blocker / "cache", ok=False)
    assert r.rc == 4
    assert r.stderr == (f"bekc: error: cannot open {blocker / 'cache'}: Not a directory\n"
                        f"note: the cache is {blocker / 'cache'}" + WAY_OUT)


def test_home_without_a_usable_cache_names_the_ways_out(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    home = bekc.workdir / "home-is-a-file"
    home.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("BEKC_CACHE_DIR", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    r = bekc.run("build", src, FAST, env=env)
    root = home / ".cache" / "bekc"
    assert (r.returncode, r.stderr) == (
        4, f"bekc: error: cannot open {root}: Not a directory\nnote: the cache is {root}" + WAY_OUT)


def snapshot(root: Path) -> dict:
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(root.rglob("*"))
            if not p.is_symlink()}


def test_read_only_prebuilt_cache_serves_hits_and_writes_nothing(bekc, kernels, tmp_path):
    """A cache a team prebuilt, which this user cannot write (another user's,
    or mounted read-only): every hit is served, nothing is written, and -v
    says once that it is read-only here and that it served the hit."""
    import shutil
    import stat
    src = kernels.cpp(bekc.workdir / "k.cpp")
    first = bekc.build(src, FAST)
    argv = [str(bekc.binary), "build", str(src), FAST, "--cache-dir", str(bekc.cache_dir), "-v"]
    env = {k: v for k, v in os.environ.items() if k != "BEKC_CACHE_DIR"}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot act as another user")
        # The other user must reach the cache: pytest's directories are 0700.
        for p in [*tmp_path.parents[:3], tmp_path, *tmp_path.rglob("*")]:
            if p.is_dir() and p.owner() == "root" and str(p) != "/tmp":
                p.chmod(p.stat().st_mode | stat.S_IXOTH | stat.S_IROTH)
            elif p.is_file():
                p.chmod(p.stat().st_mode | stat.S_IROTH)
        argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    else:
        for p in [bekc.cache_dir, *bekc.cache_dir.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
    before = snapshot(bekc.cache_dir)
    import subprocess
    r = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=bekc.workdir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(first.manifest_path)
    notes = [l for l in r.stderr.splitlines() if "read-only" in l]
    assert notes == [f"bekc: the cache {bekc.cache_dir} is read-only here: serving hits from "
                     f"it, building misses into {tmp_path / '.cache' / 'bekc'}",
                     f"bekc: cache hit in the read-only cache {bekc.cache_dir}"], r.stderr
    assert "warning" not in r.stderr
    assert snapshot(bekc.cache_dir) == before
