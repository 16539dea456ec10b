"""A CUDA compile run as nvcc's own phases (plan/nvcc_phases): the same
fat binary as one nvcc process, and a build for a new architecture that
compiles only that architecture, the rest coming from the step cache.

Real nvcc compiles here (no GPU is needed); the fat binary each library
embeds is read back with objcopy. tests/gpu/test_nvcc_split_gpu.py runs the
kernels and compares cuobjdump's SASS and PTX.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("objcopy") is None, reason="binutils' objcopy is missing")

from support.device_names import device_names, registered_names, sass
from support.device_names import library_fatbin as fatbin
from support.kernels import SCALE_ANONYMOUS_CU as KERNEL
from support.kernels import SCALE_PLAIN_CU as PLAIN
from support.kernels import RDC_CALLEE, RDC_CALLER


@pytest.fixture
def source(bekc):
    (bekc.workdir / "scale.h").write_text("#define SCALE 2.0f\n")
    src = bekc.workdir / "scale.cu"
    src.write_text(KERNEL)
    return src


def env(**extra):
    e = {k: v for k, v in os.environ.items() if k not in ("BEKC_CACHE_DIR", "BEKC_SPLIT_NVCC")}
    e.update(extra)
    return e


def reused(stderr: str) -> list:
    """The steps a build took from the step cache: "cicc compute_80", ..."""
    return sorted(" ".join(line[len("# reused: "):].split()[:-1])
                  for line in stderr.splitlines() if line.startswith("# reused: "))


def test_the_dry_run_shows_each_phase_and_the_plan_one_nvcc_when_split_is_off(bekc, source, nvcc):
    proc = bekc.run("build", "--dry-run", "--cache-dir", bekc.cache_dir, source, "--arch", "80,90")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert re.search(r"cudafe\+\+ ", text) and text.count("/cicc ") == 2, text
    assert text.count("ptxas -arch=sm_80") == 1 and text.count("ptxas -arch=sm_90") == 1, text
    assert "fatbinary --create=" in text and "--embedded-fatbin" not in text, text
    link = [line for line in text.splitlines() if " -shared " in line][-1]
    assert ".bekc.cu.o.fatbin.o" in link, link
    off = bekc.run("build", "--dry-run", "--cache-dir", bekc.cache_dir, source, "--arch", "80,90",
                   env=env(BEKC_SPLIT_NVCC="0"))
    assert "cicc" not in off.stdout and "-gencode" in off.stdout, off.stdout


@pytest.mark.parametrize("arch", ["90", "80,90,100"])
def test_the_split_library_embeds_nvccs_own_fat_binary(bekc, source, nvcc, tmp_path, arch):
    source.write_text(PLAIN)
    split = bekc.build(source, "--arch", arch, env=env(), cache_dir=tmp_path / "a")
    whole = bekc.build(source, "--arch", arch, env=env(BEKC_SPLIT_NVCC="0"),
                       cache_dir=tmp_path / "b")
    assert fatbin(split.library, tmp_path) == fatbin(whole.library, tmp_path)
    # The fat binary's own object leaves the library's stack non-executable.
    segments = subprocess.run(["readelf", "-lW", str(split.library)], capture_output=True,
                              text=True, check=True).stdout
    stack = [line for line in segments.splitlines() if "GNU_STACK" in line]
    assert stack and "RWE" not in stack[0], segments


def test_a_new_architecture_compiles_only_itself(bekc, source, nvcc, tmp_path):
    first = bekc.build(source, "--arch", "80,90", env=env())
    added = bekc.run("build", "-v", "--cache-dir", bekc.cache_dir, source, "--arch", "80,90,100",
                     env=env())
    assert added.returncode == 0, added.stderr
    # The other architectures' cicc and ptxas, and the host compile, reused;
    # sm_100's device code compiled.
    assert reused(added.stderr) == ["cicc compute_80", "cicc compute_90", "cudafe++", "nvcc",
                                    "ptxas sm_80", "ptxas sm_90"], added.stderr
    assert re.search(r"/cicc .*-arch compute_100", added.stderr), added.stderr
    # The same fat binary as a build from nothing, in another cache and
    # another build directory: the module id, in the names of the
    # anonymous namespace's kernel and variable, stays the input's.
    new = bekc.build(source, "--arch", "80,90,100", env=env())
    scratch = bekc.build(source, "--arch", "80,90,100", env=env(), cache_dir=tmp_path / "scratch")
    assert new.hit and first.key != new.key
    assert fatbin(new.library, tmp_path) == fatbin(scratch.library, tmp_path)


def test_an_edited_header_reuses_nothing_that_read_it(bekc, source, nvcc, tmp_path):
    before = bekc.build(source, "--arch", "80,90", env=env())
    (bekc.workdir / "scale.h").write_text("#define SCALE 3.0f\n")
    after = bekc.run("build", "-v", "--json", "--cache-dir", bekc.cache_dir, source,
                     "--arch", "80,90", env=env())
    assert after.returncode == 0, after.stderr
    assert not [r for r in reused(after.stderr) if r.startswith(("cicc", "ptxas"))], after.stderr
    library = Path(__import__("json").loads(after.stdout.splitlines()[-1])["library"])
    assert fatbin(library, tmp_path) != fatbin(before.library, tmp_path)


def test_step_results_are_sealed_verified_pruned_and_cleared(bekc, source, nvcc):
    bekc.build(source, "--arch", "80,90", env=env())
    steps = Path(bekc.cache_dir) / "steps"
    kept = sorted(p for p in steps.glob("*/*") if p.is_dir())
    assert len(kept) == 6, kept  # cudafe++, two cicc, two ptxas, the host compile
    # A damaged result is not used: the build compiles that step again.
    ptx = next(d / "0" for d in kept if (d / "0").read_bytes().lstrip().startswith(b"//"))
    ptx.write_bytes(ptx.read_bytes().replace(b".target", b".tarjet", 1))
    forced = bekc.run("build", "-v", "--force", "--cache-dir", bekc.cache_dir, source,
                      "--arch", "80,90", env=env())
    assert forced.returncode == 0, forced.stderr
    assert reused(forced.stderr) == [], "--force compiles every step again"
    ptx.write_bytes(ptx.read_bytes().replace(b".target", b".tarjet", 1))
    assert bekc.cache("clear", "scale", env=env()).returncode == 0  # the entry, not the steps
    again = bekc.run("build", "-v", "--cache-dir", bekc.cache_dir, source, "--arch", "80,90",
                     env=env())
    assert again.returncode == 0, again.stderr
    assert len(reused(again.stderr)) == 5, again.stderr
    # verify removes what fails its seal; prune and clear take step results too.
    ptx.write_bytes(b"damaged")
    verify = bekc.cache("verify", env=env())
    assert str(ptx.parent) in verify.stdout + verify.stderr
    assert not ptx.parent.exists()
    prune = bekc.cache("prune", "--max-size", "1", env=env())
    assert prune.returncode == 0, prune.stderr
    assert "step results" in prune.stdout, prune.stdout
    assert not any(steps.glob("*/*"))
    bekc.build(source, "--arch", "80", "--force", env=env())
    assert any(steps.glob("*/*"))
    assert bekc.cache("clear", env=env()).returncode == 0
    assert not any(steps.glob("*/*"))


def test_force_replaces_a_sealed_step_result_that_holds_the_wrong_code(bekc, source, nvcc,
                                                                       tmp_path):
    # A step result whose seal holds but whose code is wrong (a shared cache's
    # writer gone bad): --force is how a user gets rid of it, for this build
    # and for every later one that would reuse it.
    bekc.build(source, "--arch", "80,90", env=env())
    steps = Path(bekc.cache_dir) / "steps"

    def ptx_dir(target):
        return next(d for d in steps.glob("*/*") if (d / "0").is_file()
                    and f".target {target}".encode() in (d / "0").read_bytes())

    sm80, sm90 = ptx_dir("sm_80"), ptx_dir("sm_90")
    right = (sm80 / "0").read_bytes()
    shutil.rmtree(sm80)
    shutil.copytree(sm90, sm80)  # sealed, and compute_90's PTX under compute_80's key
    forced = bekc.run("build", "--force", "--cache-dir", bekc.cache_dir, source, "--arch", "80,90",
                      env=env())
    assert forced.returncode == 0, forced.stderr
    assert (sm80 / "0").read_bytes() == right
    # A later build that reuses compute_80's PTX gets the right one.
    added = bekc.build(source, "--arch", "80,90,100", env=env())
    scratch = bekc.build(source, "--arch", "80,90,100", env=env(), cache_dir=tmp_path / "scratch")
    assert fatbin(added.library, tmp_path) == fatbin(scratch.library, tmp_path)


def test_a_device_compile_error_names_the_file_and_line(bekc, source, nvcc):
    source.write_text(KERNEL.replace("y[i] = x[i] * SCALE + bias;", "y[i] = x[i] * SCALE + undeclared;"))
    failed = bekc.build(source, "--arch", "80,90", ok=False, env=env())
    assert failed.rc == 1, failed.describe()
    assert re.search(r"scale\.cu\(\d+\): error: identifier \"undeclared\" is undefined",
                     failed.stderr), failed.stderr


def waves(text: str) -> dict:
    """The wave each command of `--dry-run` or `-v` output is in: "cicc" and
    "cudafe++" (the first word naming each) -> wave number."""
    at, where = 0, {}
    for line in text.splitlines():
        wave = re.match(r"# wave (\d+):", line)
        if wave:
            at = int(wave.group(1))
        for tool in ("/cicc ", "/cudafe++ "):
            if tool in line:
                where.setdefault(tool.strip(" /"), at)
    return where


def test_a_first_build_starts_cicc_beside_cudafe_and_embeds_nvccs_fat_binary(bekc, source, nvcc,
                                                                            tmp_path):
    """In a fresh cache, on a file never compiled before, cicc does not wait
    for cudafe++: both read the module id bekc writes for the input before
    either runs, and nothing is checked after them. The library embeds the
    fat binary one nvcc process makes."""
    source.write_text(PLAIN)
    planned = bekc.run("build", "--dry-run", "--cache-dir", tmp_path / "fresh", source,
                       "--arch", "80,90", env=env())
    assert planned.returncode == 0, planned.stderr
    where = waves(planned.stdout)
    assert where["cicc"] <= where["cudafe++"], planned.stdout
    assert "--gen_module_id_file" not in planned.stdout, planned.stdout
    assert "# check" not in planned.stdout and ".module_id.predicted" not in planned.stdout
    assert re.search(r"# write-wrapper: \S+\.module_id\n", planned.stdout), planned.stdout
    first = bekc.run("build", "-v", "--json", "--cache-dir", tmp_path / "first", source,
                     "--arch", "80,90", env=env())
    assert first.returncode == 0, first.stderr
    where = waves(first.stderr)
    assert where["cicc"] <= where["cudafe++"], first.stderr
    library = Path(json.loads(first.stdout.splitlines()[-1])["library"])
    whole = bekc.build(source, "--arch", "80,90", env=env(BEKC_SPLIT_NVCC="0"),
                       cache_dir=tmp_path / "whole")
    assert fatbin(library, tmp_path) == fatbin(whole.library, tmp_path)


def test_an_anonymous_namespaces_device_code_is_nvccs_under_the_module_id_bekc_gives(
        bekc, source, nvcc, tmp_path):
    """A first build of a source whose kernel and variable are in an
    anonymous namespace: its device code is one nvcc's, instruction for
    instruction, the names apart (bekc's module id is not cudafe++'s), and
    the host code registers the kernel under the name the device code has.
    The same in every build, in any cache."""
    split = bekc.build(source, "--arch", "80,90", env=env(), cache_dir=tmp_path / "a")
    whole = bekc.build(source, "--arch", "80,90", env=env(BEKC_SPLIT_NVCC="0"),
                       cache_dir=tmp_path / "b")
    code = sass(split.library, tmp_path)
    assert len(code) == 2 and any("_ZNNS" in k for k in code[0]), code
    assert code == sass(whole.library, tmp_path)
    names = device_names(split.library, tmp_path)
    assert names and names != device_names(whole.library, tmp_path)
    # What the host code hands the CUDA runtime: the device names, outside the fat binary.
    kernels = {n for n in registered_names(split.library, tmp_path) if "scale_kernel" in n}
    assert kernels and kernels <= names, (kernels, names)
    again = bekc.build(source, "--arch", "80,90", "--force", env=env(), cache_dir=tmp_path / "c")
    assert fatbin(again.library, tmp_path) == fatbin(split.library, tmp_path)
    assert again.library.read_bytes() == split.library.read_bytes()


def test_modules_with_the_same_anonymous_kernel_get_distinct_device_names(bekc, nvcc, tmp_path):
    """Modules built from files of the same name and bytes in two
    directories, and from one file under two module names, each with an
    anonymous namespace's kernel of the same name, loaded in one process:
    their device names differ."""
    libraries = []
    for d, module in (("x", "scale_x"), ("y", "scale_y"), ("x", "scale_z")):
        (bekc.workdir / d).mkdir(exist_ok=True)
        (bekc.workdir / d / "scale.h").write_text("#define SCALE 2.0f\n")
        (bekc.workdir / d / "scale.cu").write_text(KERNEL)
        libraries.append(bekc.build(bekc.workdir / d / "scale.cu", "--name", module,
                                    "--arch", "80", env=env()).library)
    names = [device_names(lib, tmp_path) for lib in libraries]
    assert all(names), names
    assert not (names[0] & names[1] or names[0] & names[2] or names[1] & names[2]), names
    for lib in libraries:
        ctypes.CDLL(str(lib), mode=os.RTLD_LOCAL)


def test_an_edited_comment_reuses_the_device_code(bekc, source, nvcc, tmp_path):
    """The module id follows the input's module and place, not its bytes: an
    edit that leaves what cicc compiles as it was (a comment, no line added)
    reuses every architecture's cicc and ptxas, and the library is the one a
    build from nothing makes."""
    bekc.build(source, "--arch", "80,90", env=env())
    assert "}  // namespace\n" in KERNEL
    source.write_text(KERNEL.replace("}  // namespace\n", "}  // namespace, edited\n"))
    edited = bekc.run("build", "-v", "--json", "--cache-dir", bekc.cache_dir, source,
                      "--arch", "80,90", env=env())
    assert edited.returncode == 0, edited.stderr
    steps = reused(edited.stderr)
    assert {"cicc compute_80", "cicc compute_90", "ptxas sm_80", "ptxas sm_90"} <= set(steps), \
        edited.stderr
    library = Path(json.loads(edited.stdout.splitlines()[-1])["library"])
    scratch = bekc.build(source, "--arch", "80,90", env=env(), cache_dir=tmp_path / "scratch")
    assert fatbin(library, tmp_path) == fatbin(scratch.library, tmp_path)


def test_a_module_id_an_earlier_bekc_remembered_changes_nothing(bekc, source, nvcc, tmp_path):
    """bekc gives each CUDA input its module id itself; timings.json keeps
    none, and one an earlier bekc wrote there is not used."""
    first = bekc.build(source, "--arch", "80,90", env=env())
    memo_file = Path(bekc.cache_dir) / "timings.json"
    memo = json.loads(memo_file.read_text())
    name = str(source.resolve())
    assert "m" not in memo[name], memo
    memo[name]["m"] = "_00000000_6_wrong_00000000"
    memo_file.write_text(json.dumps(memo))
    planned = bekc.run("build", "--dry-run", "--force", "--cache-dir", bekc.cache_dir, source,
                       "--arch", "80,90", env=env())
    assert "wrong" not in planned.stdout and "# check" not in planned.stdout, planned.stdout
    forced = bekc.build(source, "--arch", "80,90", "--force", env=env())
    assert forced.library.read_bytes() == first.library.read_bytes()
    assert "differs" not in forced.stderr, forced.stderr


def test_a_step_compiled_with_another_compiler_environment_is_not_reused(bekc, source, nvcc):
    """The variables the compilers read (toolchain/compiler_env: CPATH,
    GCC_EXEC_PREFIX, CCC_OVERRIDE_OPTIONS, SOURCE_DATE_EPOCH, ...) are in
    every step's key, as in the build's."""
    bekc.build(source, "--arch", "80,90", env=env(SOURCE_DATE_EPOCH="1700000000"))
    other = bekc.run("build", "-v", "--cache-dir", bekc.cache_dir, source, "--arch", "80,90",
                     env=env(SOURCE_DATE_EPOCH="1800000000"))
    assert other.returncode == 0, other.stderr
    assert reused(other.stderr) == [], other.stderr
    same = bekc.run("build", "-v", "--force", "--cache-dir", bekc.cache_dir, source, "--arch",
                    "80,90", env=env(SOURCE_DATE_EPOCH="1800000000"))
    assert same.returncode == 0 and reused(same.stderr) == [], "--force reuses nothing"


def undefined_symbols(library: Path) -> str:
    return subprocess.run(["nm", "-D", "--undefined-only", str(library)], capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize("given", ["--cuda-flag", "NVCC_APPEND_FLAGS"])
def test_a_file_a_flag_makes_the_host_compiler_read_is_in_its_step_key(bekc, source, nvcc, given):
    """The bytes of a file that a flag makes a phase read (a response file
    handed to the host compiler, -specs=, -fprofile-use=, ...), given to bekc
    or to nvcc through its environment, are in the build's key and in that
    phase's step key: when they change, the host compile runs again, and the
    library is the one a build in an empty cache makes."""
    rsp = bekc.workdir / "flags.rsp"
    rsp.write_text("\n")
    flag = "-Xcompiler=@flags.rsp"
    args = (source, "--arch", "80") + ((f"--cuda-flag={flag}",) if given == "--cuda-flag" else ())
    e = env() if given == "--cuda-flag" else env(NVCC_APPEND_FLAGS=flag)
    first = bekc.build(*args, env=e)
    assert "__cyg_profile_func_enter" not in undefined_symbols(first.library)
    rsp.write_text("-finstrument-functions\n")
    changed = bekc.run("build", "-v", "--json", "--cache-dir", bekc.cache_dir, *args, env=e)
    assert changed.returncode == 0, changed.stderr
    assert "nvcc" not in reused(changed.stderr), changed.stderr
    library = Path(json.loads(changed.stdout.splitlines()[-1])["library"])
    assert "__cyg_profile_func_enter" in undefined_symbols(library)


@pytest.mark.parametrize("variable", ["NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"])
def test_relocatable_device_code_asked_by_the_environment_is_not_split(bekc, source, nvcc,
                                                                       variable):
    """nvcc reads more of its flags from $NVCC_PREPEND_FLAGS and
    $NVCC_APPEND_FLAGS. Relocatable device code asked for there keeps each
    compile one nvcc process, as --cuda-flag=-rdc=true does: the device link
    resolves a __device__ function that another input defines, and the key
    differs from the build without it."""
    caller = bekc.workdir / "caller.cu"
    caller.write_text(RDC_CALLER)
    callee = bekc.workdir / "callee.cu"
    callee.write_text(RDC_CALLEE)
    rdc = env(**{variable: "-rdc=true"})
    args = (caller, callee, "--name", "rdc", "--arch", "80")
    planned = bekc.run("build", "--dry-run", "--cache-dir", bekc.cache_dir, *args, env=rdc)
    assert planned.returncode == 0, planned.stderr
    assert "/cicc " not in planned.stdout and "-nodlink" not in planned.stdout, planned.stdout
    built = bekc.build(*args, env=rdc)
    ctypes.CDLL(str(built.library), mode=os.RTLD_LOCAL)  # nothing left unresolved
    assert bekc.build(source, "--arch", "80", env=rdc).key != \
        bekc.build(source, "--arch", "80", env=env()).key


@pytest.mark.parametrize("variable", ["NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"])
@pytest.mark.parametrize("option", ["-dc", "--device-c", "-c", "-dw"])
def test_compiling_only_asked_by_the_environment_still_links_the_library(bekc, source, nvcc,
                                                                          variable, option):
    """nvcc reads $NVCC_PREPEND_FLAGS and $NVCC_APPEND_FLAGS on the link as on
    the compiles. An option there that asks for compiling only (-c, -dc, -dw)
    builds the library: the link runs without it, and -dc's relocatable
    device code goes through the device link, which resolves a __device__
    function that another input defines."""
    e = env(**{variable: f"-lineinfo {option}"})
    built = bekc.build(source, "--arch", "80", env=e)
    ctypes.CDLL(str(built.library), mode=os.RTLD_LOCAL)
    if option in ("-dc", "--device-c"):
        caller = bekc.workdir / "caller.cu"
        caller.write_text(RDC_CALLER)
        callee = bekc.workdir / "callee.cu"
        callee.write_text(RDC_CALLEE)
        rdc = bekc.build(caller, callee, "--name", "rdc", "--arch", "80", env=e)
        ctypes.CDLL(str(rdc.library), mode=os.RTLD_LOCAL)  # nothing left unresolved


@pytest.mark.parametrize("variable", ["NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"])
@pytest.mark.parametrize("option", ["-E", "-ptx", "--cubin", "-M", "-dlink", "-lib"])
def test_another_phase_asked_by_the_environment_is_refused_before_compiling(bekc, source, nvcc,
                                                                            variable, option):
    """An option in nvcc's environment variables that makes it stop before an
    object or a library (preprocessing, PTX, dependencies, the device link
    alone, a static library) is a usage error before anything compiles: it
    names the variable and the option and says what to do."""
    proc = bekc.run("build", "-v", "--cache-dir", bekc.cache_dir, source, "--arch", "80",
                    env=env(**{variable: option}))
    assert proc.returncode == 2, proc.stderr
    assert f"${variable} has '{option}'" in proc.stderr, proc.stderr
    assert "--cuda-flag=-rdc=true" in proc.stderr, proc.stderr
    assert "nvcc fatal" not in proc.stderr and "# wave" not in proc.stderr, proc.stderr
