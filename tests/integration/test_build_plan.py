"""`bekc build --dry-run`: the commands a build would run, for every shape of
input and every compile option (SPEC §4). Nothing is compiled here.

The dry-run prints each command as a POSIX-shell line; shlex (a parser, not a
shell) turns it back into the argument vector the build would spawn.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from support.kernels import RDC_CALLEE, RDC_CALLER


def plan_lines(proc):
    """Every step of the dry run: (kind, argv), kind "#..." for what bekc
    writes itself, "run" for a process."""
    steps = []
    for line in proc.stdout.splitlines():
        if not line.strip():
            continue
        if line.startswith("# "):
            kind, _, rest = line[2:].partition(":")
            steps.append((kind, shlex.split(rest)))
        else:
            steps.append(("run", shlex.split(line)))
    return steps


def bekcs_own(argv):
    """bekc's runtime object (compiled once per host compiler) or the
    library's entry points (bekc_handlers.cpp, compiled with bekc's flags)."""
    return any(a.endswith(("/bekc/handler_rt.cpp", "/bekc_handlers.cpp")) for a in argv)


def dry_run(bekc, *args, ok=True, cwd=None):
    """The commands that compile and link the user's code (bekc_own's left
    out): each input's compile, then the link. Each CUDA compile as the one
    nvcc command the plan holds ($BEKC_SPLIT_NVCC=0): a build runs it as
    nvcc's phases, derived from it (test_nvcc_split.py)."""
    env = {k: v for k, v in os.environ.items() if k != "BEKC_CACHE_DIR"}
    env["BEKC_SPLIT_NVCC"] = "0"
    proc = bekc.run("build", "--dry-run", "--cache-dir", bekc.cache_dir, *args, cwd=cwd, env=env)
    if ok:
        assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr}"
    cmds = [argv for kind, argv in plan_lines(proc) if kind == "run" and not bekcs_own(argv)]
    return cmds, proc


def tool_name(argv):
    return Path(argv[0]).name


def gencodes(argv):
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-gencode"]


def has_pair(argv, flag, value):
    return any(a == flag and b == value for a, b in zip(argv, argv[1:]))


@pytest.fixture
def cpp_src(bekc, kernels):
    return kernels.cpp(bekc.workdir / "host.cpp", fn="host_fn")


@pytest.fixture
def cu_src(bekc, kernels):
    return kernels.cu(bekc.workdir / "dev.cu", fn="dev_fn")


# --------------------------------------------------------------------------- shapes
def test_cpu_only_is_host_compiler_runs(bekc, cpp_src):
    cmds, proc = dry_run(bekc, cpp_src)
    assert len(cmds) == 2, proc.stdout
    argv, link = cmds
    assert Path(argv[0]).is_absolute()
    assert "nvcc" not in tool_name(argv) and link[0] == argv[0]
    assert "-c" in argv and "-fPIC" in argv and "-O3" in argv and "-std=c++17" in argv
    assert not any("gencode" in a for a in argv)
    # The generated wrapper is what is compiled; it lives in a private directory.
    assert any(a.endswith(".bekc.cpp") for a in argv)
    assert "-shared" in link and argv[argv.index("-o") + 1] in link
    assert Path(link[link.index("-o") + 1]).name == "libhost.so"


def test_cpu_build_needs_no_nvcc(bekc, cpp_src):
    cmds, proc = dry_run(bekc, cpp_src, "--nvcc", "/nonexistent/nvcc")
    assert len(cmds) == 2
    assert all("nvcc" not in tool_name(c) for c in cmds)


def test_cuda_only_is_an_nvcc_compile_and_an_nvcc_link(bekc, cu_src, nvcc):
    cmds, proc = dry_run(bekc, cu_src, "--arch", "sm_90")
    assert len(cmds) == 2, proc.stdout
    argv, link = cmds
    assert tool_name(argv) == "nvcc" and tool_name(link) == "nvcc"
    assert "-c" in argv and "-shared" not in argv
    ccbin = argv[argv.index("-ccbin") + 1]
    assert Path(ccbin).is_absolute() and "nvcc" not in ccbin
    assert gencodes(argv) == ["arch=compute_90,code=sm_90", "arch=compute_90,code=compute_90"]
    assert "-shared" in link and argv[argv.index("-o") + 1] in link
    assert Path(link[link.index("-o") + 1]).name == "libdev.so"


def test_the_entry_points_compile_beside_the_inputs_with_bekcs_flags(bekc, cu_src, cpp_src,
                                                                     nvcc):
    """bekc_handlers.cpp (the library's XLA entry points) includes only bekc's
    headers: the host compiler builds it in the inputs' wave, without the
    user's flags, and the link takes its object."""
    _, proc = dry_run(bekc, cu_src, cpp_src, "--arch", "90", "-O1", "-D", "FOO", "-I",
                      bekc.workdir, "--cxx-flag=-Wall")
    steps = plan_lines(proc)
    writes = [argv[0] for k, argv in steps if k == "write-wrapper"]
    assert Path(writes[-1]).name == "bekc_handlers.cpp", steps
    runs = [argv for k, argv in steps if k == "run"]
    entry = [argv for argv in runs if any(a.endswith("/bekc_handlers.cpp") for a in argv)]
    assert len(entry) == 1, steps
    h = entry[0]
    assert "nvcc" not in tool_name(h) and "-O2" in h and "-c" in h
    assert not [a for a in h if a in ("-O1", "-DFOO", f"-I{bekc.workdir}", "-Wall")]
    assert h[h.index("-o") + 1] in runs[-1], "the link takes the entry points' object"
    # In the first wave, beside the inputs; the link alone in the second.
    kinds = [k for k, _ in steps]
    assert kinds.index("wave 1") < steps.index(("run", h)) < kinds.index("wave 2"), steps
    assert kinds[kinds.index("wave 2"):] == ["wave 2", "run"], steps


def test_mixed_compiles_each_then_links_with_nvcc(bekc, cu_src, cpp_src, nvcc):
    cmds, proc = dry_run(bekc, cu_src, cpp_src, "--arch", "90", "--name", "mixed")
    assert len(cmds) == 3, proc.stdout
    nv, cx, link = cmds
    assert tool_name(nv) == "nvcc" and "-c" in nv
    assert "nvcc" not in tool_name(cx) and "-c" in cx
    assert nv[nv.index("-ccbin") + 1] == cx[0], "nvcc must use the same host compiler"
    objects = [nv[nv.index("-o") + 1], cx[cx.index("-o") + 1]]
    assert tool_name(link) == "nvcc" and "-shared" in link
    assert [a for a in link if a in objects] == objects
    assert Path(link[link.index("-o") + 1]).name == "libmixed.so"


def test_two_cpp_inputs_link_with_the_host_compiler(bekc, kernels, cpp_src):
    other = kernels.cpp(bekc.workdir / "other.cpp", fn="other_fn")
    cmds, proc = dry_run(bekc, cpp_src, other)
    assert len(cmds) == 3, proc.stdout
    assert all("nvcc" not in tool_name(c) for c in cmds)
    assert "-shared" in cmds[2] and cmds[2][0] == cmds[0][0]


def test_directory_input_means_every_source_in_it_sorted(bekc, kernels):
    d = bekc.workdir / "kernels"
    kernels.cpp(d / "b.cpp", fn="fb")
    kernels.cpp(d / "a.cpp", fn="fa")
    (d / "notes.txt").write_text("not a kernel")
    cmds, proc = dry_run(bekc, d, "--name", "dirmod")
    assert len(cmds) == 3, proc.stdout
    compiled = [next(a for a in c if a.endswith(".bekc.cpp")) for c in cmds[:2]]
    assert Path(compiled[0]).name.endswith("a.bekc.cpp")
    assert Path(compiled[1]).name.endswith("b.bekc.cpp")


def test_multi_arch_sorted_deduplicated_ptx_for_highest(bekc, cu_src, nvcc):
    cmds, _ = dry_run(bekc, cu_src, "--arch", "9.0,sm_80,90,86")
    assert gencodes(cmds[0]) == [
        "arch=compute_80,code=sm_80",
        "arch=compute_86,code=sm_86",
        "arch=compute_90,code=sm_90",
        "arch=compute_90,code=compute_90",
    ]


def test_bad_arch_is_a_usage_error(bekc, cu_src, nvcc):
    _, proc = dry_run(bekc, cu_src, "--arch", "sm_9x", ok=False)
    assert proc.returncode == 2
    assert "sm_9x" in proc.stderr


def test_an_arch_nvcc_has_not_says_why_and_what_was_meant(bekc, cu_src):
    """A refused architecture reads as a sentence, guesses the one meant,
    and lists those bekc knows; before any tool is looked for."""
    _, proc = dry_run(bekc, cu_src, "--arch", "sm_75x", ok=False)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[:2] == [
        "bekc: error: --arch: nvcc does not compile for 'sm_75x': 'x' is not an architecture "
        "suffix (nvcc's are 'a' and 'f')",
        "note: did you mean sm_75?"], proc.stderr
    assert lines[2].startswith("note: the architectures bekc knows: sm_50, ") and \
        "sm_120, sm_121" in lines[2] and len(lines) == 3, proc.stderr


def test_arch_auto_without_gpu_warns_and_uses_the_default(bekc, cu_src, nvcc):
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU may be present: auto would pick it")
    cmds, proc = dry_run(bekc, cu_src, "--arch", "auto")
    assert "warning" in proc.stderr and "sm_80" in proc.stderr and "--arch" in proc.stderr
    assert "arch=compute_80,code=sm_80" in gencodes(cmds[0])
    _, quiet = dry_run(bekc, cu_src, "--arch", "auto", "-q")
    assert "warning" not in quiet.stderr


NAMED_IN_FLAGS = [["--cuda-flag=-arch=sm_86"], ["--cuda-flag=-arch", "--cuda-flag=sm_86"],
                  ["--cuda-flag=--gpu-architecture=sm_86"], ["--cuda-flag=-arch=compute_86",
                                                             "--cuda-flag=-code=sm_86"],
                  ["--cuda-flag=-gencode", "--cuda-flag=arch=compute_86,code=sm_86"],
                  ["--cuda-flag=--generate-code=arch=compute_86,code=sm_86"]]


@pytest.mark.parametrize("flags", NAMED_IN_FLAGS, ids=lambda f: " ".join(f))
def test_an_arch_named_in_the_cuda_flags_is_the_choice(bekc, cu_src, nvcc, flags):
    """The user's own nvcc architecture options count as the choice: with no
    GPU and no --arch, bekc adds no sm_80 of its own and does not warn that it
    fell back to it."""
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU may be present: auto would add it")
    cmds, proc = dry_run(bekc, cu_src, *flags)
    assert "warning" not in proc.stderr, proc.stderr
    assert not [g for g in gencodes(cmds[0]) if "compute_80" in g], cmds[0]
    words = [f.split("=", 1)[1] for f in flags]
    assert [a for a in cmds[0] if a in words] == words  # the user's, as given


def test_arch_is_ignored_without_cuda_inputs(bekc, cpp_src):
    cmds, proc = dry_run(bekc, cpp_src, "--arch", "auto")
    assert "warning" not in proc.stderr
    assert not any("gencode" in a for a in cmds[0])


# --------------------------------------------------------------------------- flags
@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_opt_level_reaches_every_compile(bekc, cu_src, cpp_src, nvcc, level):
    cmds, _ = dry_run(bekc, cu_src, cpp_src, "--arch", "90", f"-O{level}")
    for c in cmds[:2]:
        assert f"-O{level}" in c
        assert not [a for a in c if a.startswith("-O") and a != f"-O{level}"]


def test_opt_level_out_of_range_is_a_usage_error(bekc, cpp_src):
    _, proc = dry_run(bekc, cpp_src, "-O4", ok=False)
    assert proc.returncode == 2


def test_default_is_O3_without_fast_math(bekc, cu_src, cpp_src, nvcc):
    cmds, _ = dry_run(bekc, cu_src, cpp_src, "--arch", "90")
    nv, cx = cmds[0], cmds[1]
    assert "-O3" in nv and "-O3" in cx
    assert "--use_fast_math" not in nv and "-ffast-math" not in cx


def test_fast_math(bekc, cu_src, cpp_src, nvcc):
    cmds, _ = dry_run(bekc, cu_src, cpp_src, "--arch", "90", "--fast-math")
    assert "--use_fast_math" in cmds[0]
    assert "-ffast-math" in cmds[1]


def test_include_dirs_and_defines(bekc, cu_src, cpp_src, nvcc, tmp_path):
    inc1 = bekc.workdir / "inc one"
    inc2 = tmp_path / "inc2"
    inc1.mkdir()
    inc2.mkdir()
    cmds, _ = dry_run(bekc, cu_src, cpp_src, "--arch", "90", "-I", "inc one", "-I", inc2,
                      "-D", "FOO", "-D", "MSG=hello world", "-DBAR=2")
    for c in cmds[:2]:
        # Relative -I is resolved against the working directory, order kept.
        i1, i2 = c.index(f"-I{inc1}"), c.index(f"-I{inc2}")
        assert i1 < i2
        assert "-DFOO" in c and "-DMSG=hello world" in c and "-DBAR=2" in c
    assert "-DFOO" not in cmds[2]


def test_cuda_and_cxx_flags_go_to_their_compiler_only(bekc, cu_src, cpp_src, nvcc):
    cmds, _ = dry_run(bekc, cu_src, cpp_src, "--arch", "90", "--cuda-flag=-lineinfo",
                      "--cuda-flag=--expt-relaxed-constexpr", "--cxx-flag=-Wall",
                      "--cxx-flag=-fno-strict-aliasing")
    nv, cx, link = cmds
    assert "-lineinfo" in nv and "--expt-relaxed-constexpr" in nv
    assert "-Wall" not in nv and "-fno-strict-aliasing" not in nv
    assert "-Wall" in cx and "-fno-strict-aliasing" in cx
    assert "-lineinfo" not in cx
    assert nv.index("-lineinfo") < nv.index("--expt-relaxed-constexpr")


def test_ldflags_go_to_the_link_after_objects(bekc, cu_src, cpp_src, nvcc):
    cmds, _ = dry_run(bekc, cu_src, cpp_src, "--arch", "90", "--ldflag=-L/opt/x",
                      "--ldflag=-lcublas")
    nv, cx, link = cmds
    assert "-lcublas" not in nv and "-lcublas" not in cx
    objs = [i for i, a in enumerate(link) if a.endswith(".o")]
    assert link.index("-L/opt/x") < link.index("-lcublas")
    assert link.index("-lcublas") > max(objs)


def test_ldflags_in_a_single_input_build(bekc, cpp_src):
    cmds, _ = dry_run(bekc, cpp_src, "--ldflag=-lm")
    assert "-lm" not in cmds[0] and "-lm" in cmds[1]


def test_std(bekc, cu_src, cpp_src, nvcc):
    cmds, _ = dry_run(bekc, cu_src, cpp_src, "--arch", "90", "--std", "c++20")
    for c in cmds[:2]:
        assert "-std=c++20" in c and "-std=c++17" not in c


def test_explicit_compilers(bekc, cpp_src, tmp_path):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++")
    cmds, _ = dry_run(bekc, cpp_src, "--cxx", gxx)
    assert cmds[0][0] == str(Path(gxx).absolute())  # symlinks kept: run as found
    _, proc = dry_run(bekc, cpp_src, "--cxx", tmp_path / "no-such-g++", ok=False)
    assert proc.returncode == 3
    assert "--cxx" in proc.stderr


def test_dry_run_builds_nothing(bekc, cpp_src):
    cmds, proc = dry_run(bekc, cpp_src)
    assert cmds
    assert bekc.entries() == []
    assert not list(bekc.cache_dir.glob("tmp/build.*"))
    assert not (bekc.workdir / "libhost.so").exists()


def test_paths_with_spaces_and_quotes_survive_as_single_arguments(bekc, kernels, nvcc):
    d = bekc.workdir / "my kernels 'v2' ü"
    cu = kernels.cu(d / "dev k.cu", fn="dev_fn")
    cpp = kernels.cpp(d / "host k.cpp", fn="host_fn")
    cmds, proc = dry_run(bekc, cu, cpp, "--arch", "90", "--name", "spaced", "-I", d)
    assert len(cmds) == 3, proc.stdout
    for c in cmds[:2]:
        assert f"-I{d}" in c


def test_arch_native_without_gpu_is_a_usage_error(bekc, cu_src, nvcc):
    if Path("/proc/driver/nvidia/gpus").is_dir():
        pytest.skip("a GPU is present")
    _, proc = dry_run(bekc, cu_src, "--arch", "native", ok=False)
    assert proc.returncode == 2
    assert "native" in proc.stderr and "--arch" in proc.stderr


# --------------------------------------------------------------------------- with a GPU
needs_gpu = pytest.mark.skipif(
    not Path("/proc/driver/nvidia/gpus").is_dir() or shutil.which("nvidia-smi") is None,
    reason="needs an NVIDIA driver and nvidia-smi")


def gpus_present():
    out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout
    return sorted({"sm_" + line.strip().replace(".", "") for line in out.splitlines()
                   if line.strip()}, key=lambda s: int(s[3:]))


def expected_gencodes(sms):
    out = [f"arch=compute_{s[3:]},code={s}" for s in sms]
    return out + [f"arch=compute_{sms[-1][3:]},code=compute_{sms[-1][3:]}"]


@needs_gpu
@pytest.mark.parametrize("mode", ["auto", "native"])
def test_arch_auto_and_native_compile_for_the_gpus_present(bekc, cu_src, nvcc, mode):
    sms = gpus_present()
    for _ in range(2):  # the second run may use what the first one remembered
        cmds, proc = dry_run(bekc, cu_src, "--arch", mode)
        assert gencodes(cmds[0]) == expected_gencodes(sms), proc.stderr
        assert "warning" not in proc.stderr


@needs_gpu
def test_arch_auto_on_a_shared_cache_uses_this_machines_gpus(bekc, cu_src, nvcc):
    """Another machine (same driver build, GPUs in the same PCI slots, but
    an older model) used this cache directory first and left its answer."""
    root = Path("/proc/driver/nvidia")
    text = (root / "version").read_text()
    for bus in sorted(p.name for p in (root / "gpus").iterdir()):
        text += "\n" + bus
    fingerprint = hashlib.sha256(text.encode()).hexdigest()
    bekc.cache_dir.mkdir(parents=True, exist_ok=True)
    (bekc.cache_dir / "gpus.json").write_text(
        json.dumps({"fingerprint": fingerprint, "archs": ["7.5"]}))
    cmds, proc = dry_run(bekc, cu_src, "--arch", "auto")
    assert gencodes(cmds[0]) == expected_gencodes(gpus_present()), proc.stderr


# ------------------------------------------------------------ the whole graph


def test_dry_run_prints_every_step_of_a_first_build_in_order(bekc, cpp_src, cu_src, nvcc):
    """A fresh cache: the wrappers and runtime headers are written, bekc's
    runtime object is compiled, then the user's code; each step after what it
    needs, and nothing is created."""
    steps = plan_lines(dry_run(bekc, cu_src, cpp_src, "--arch", "90", "--name", "m")[1])
    kinds = [k for k, _ in steps]
    assert kinds[:4] == ["write-wrapper"] * 3 + ["runtime-headers"], steps
    runs = [argv for k, argv in steps if k == "run"]
    assert len(runs) == 5, steps  # bekc_rt.o, two inputs, the entry points, the link
    rt = runs[0]
    assert rt[rt.index("-c") + 1].endswith("/bekc/handler_rt.cpp"), rt
    obj = rt[rt.index("-o") + 1]
    link = runs[-1]
    assert "-shared" in link
    # The link names the object where the cache keeps it, not the build dir.
    cached = [a for a in link if a.endswith("/bekc_rt.o")]
    assert len(cached) == 1 and cached[0] != obj and cached[0].startswith(str(bekc.cache_dir))
    wrappers = [argv[0] for k, argv in steps if k == "write-wrapper"]
    assert all(any(w in argv for argv in runs) for w in wrappers)
    assert not Path(wrappers[0]).exists(), "a dry run writes nothing"
    assert not (Path(bekc.cache_dir) / "runtime").exists(), "a dry run writes nothing"


def test_dry_run_leaves_out_what_the_cache_already_has(bekc, cpp_src):
    """After one real build the runtime headers and object are in the cache:
    the next plan only writes the wrapper and compiles the user's code."""
    other = cpp_src.with_name("other.cpp")
    other.write_text(cpp_src.read_text())
    built = bekc.run("build", "--cache-dir", bekc.cache_dir, "-O0", cpp_src)
    assert built.returncode == 0, built.stderr
    steps = plan_lines(dry_run(bekc, other, "-O0")[1])
    assert [k for k, _ in steps] == ["write-wrapper", "write-wrapper", "wave 1", "run", "run",
                                     "wave 2", "run"], steps


def test_dry_run_shows_the_waves_and_nvccs_threads(bekc, cu_src, cpp_src, nvcc):
    """The parallel plan: which commands run side by side, and how many of
    -j's slots each takes (nvcc's --threads compiles architectures at once)."""
    built = bekc.run("build", "--cache-dir", bekc.cache_dir, cpp_src, "-O0")  # bekc_rt.o
    assert built.returncode == 0, built.stderr
    one = plan_lines(dry_run(bekc, cu_src, "--arch", "80,90,100", "-j", "16")[1])
    waves = [k for k, _ in one if k.startswith("wave")]
    assert waves == ["wave 1", "wave 2"], one
    nv = next(argv for k, argv in one if k == "run")
    assert nv[nv.index("--threads") + 1] == "4"  # three archs and the PTX
    header = dry_run(bekc, cu_src, "--arch", "80,90,100", "-j", "16")[1].stdout
    # nvcc's four threads beside the entry points' one.
    assert "# wave 1: 2 commands side by side, 5 slots within -j 16" in header
    serial_run = dry_run(bekc, cu_src, "--arch", "80,90,100", "-j", "1")[1]
    serial = plan_lines(serial_run)
    assert not any("--threads" in argv for k, argv in serial if k == "run")
    # More slots than -j: the wave's commands queue, they do not run side by side.
    assert "# wave 1: 2 commands, 2 slots, queued within -j 1" in serial_run.stdout
    assert "side by side" not in serial_run.stdout
    # Two inputs within -j 3: one slot each, side by side with the entry
    # points, then the link.
    two = dry_run(bekc, cu_src, cpp_src, "--arch", "80,90,100", "-j", "3", "--name", "m")[1]
    assert "# wave 1: 3 commands side by side, 3 slots within -j 3" in two.stdout
    assert "# wave 2: 1 command, 1 slot within -j 3" in two.stdout


# --------------------------------------------------------------------------- device link
def nvcc_major(nvcc):
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    release = out.split("release ")[-1].split(",")[0]
    return int(release.split(".")[0]) if release[:1].isdigit() else 0


def test_plain_cuda_link_skips_the_empty_device_link(bekc, cu_src, nvcc):
    """Whole-program device code registers itself: nvcc's link is told to
    skip nvlink, which would only add an empty image."""
    if nvcc_major(nvcc) < 12:
        pytest.skip("-nodlink is passed to nvcc 12.0 and later")
    link = dry_run(bekc, cu_src, "--arch", "80,90")[0][-1]
    assert "-nodlink" in link and not gencodes(link), link


def test_relocatable_device_code_is_device_linked_for_the_builds_archs(bekc, kernels, nvcc):
    """-rdc=true: a __device__ function defined in one input and called from
    another resolves in the device link, which nvlink runs for the build's
    architectures (by default it links only nvcc's own default arch, and
    skips the objects, which have none of it, with a warning)."""
    caller = kernels.text(bekc.workdir / "caller.cu", RDC_CALLER)
    callee = kernels.text(bekc.workdir / "callee.cu", RDC_CALLEE)
    args = (caller, callee, "--name", "rdc", "--arch", "80,90", "--cuda-flag=-rdc=true")
    link = dry_run(bekc, *args)[0][-1]
    assert "-nodlink" not in link
    assert gencodes(link) == ["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90",
                              "arch=compute_90,code=compute_90"], link
    built = bekc.build(*args, "-v")
    assert "nvlink warning" not in built.stderr, built.describe()
    import ctypes, os
    ctypes.CDLL(str(built.library), mode=os.RTLD_LOCAL)  # nothing left unresolved


def test_an_undefined_device_function_fails_the_build(bekc, kernels, nvcc):
    """With the device link run for the build's architectures, a missing
    __device__ definition is a build error. Before, nvlink linked only its
    default architecture, skipped the objects (none had it) and the build
    succeeded with the reference unresolved."""
    caller = kernels.text(bekc.workdir / "caller.cu", RDC_CALLER)
    failed = bekc.build(caller, "--arch", "80", "--cuda-flag=-rdc=true", ok=False)
    assert failed.rc == 1, failed.describe()
    # What nvlink names, said in the user's terms: the object's source and
    # the demangled function.
    assert "bekc: error: linking libcaller.so failed" in failed.stderr, failed.describe()
    assert f"is compiled from '{caller}'" in failed.stderr, failed.describe()
    assert "is shift(float)" in failed.stderr, failed.describe()
