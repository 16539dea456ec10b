"""What `bekc build` leaves behind: the manifest (SPEC §6), `-o DIR`,
`--depfile`, `--no-cuda-graph`, and real builds in awkward directories."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

FAST = "-O0"


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def exported(library: Path, symbol: str) -> bool:
    lib = ctypes.CDLL(str(library), mode=os.RTLD_LOCAL)
    return hasattr(lib, symbol)


SCALE_CPP = """\
#include "brainevent/common.h"

// A function made by a macro, like most real kernel libraries.
#define DEFINE_SCALE(SUFFIX, T)                                              \\
    void scale##SUFFIX(const BE::Tensor x, BE::Tensor out, T factor) {       \\
        const T* in = static_cast<const T*>(x.data_ptr());                   \\
        T* o = static_cast<T*>(out.data_ptr());                              \\
        for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] * factor;       \\
    }

// @BE scale_f32
DEFINE_SCALE(_f32, float)

// @BE pair arg arg ret ret attr.n:int32
void pair(const BE::Tensor a, const BE::Tensor b, BE::Tensor c, BE::Tensor d, int n) {}
"""


# --------------------------------------------------------------------------- manifest
def test_manifest_describes_the_library_and_targets(bekc, kernels):
    src = kernels.text(bekc.workdir / "ops.cpp", SCALE_CPP)
    r = bekc.build(src, FAST, "--target-prefix", "my.ops")
    m = r.manifest
    assert m["schema"] == 1
    assert m["name"] == "ops"
    assert re.fullmatch(r"[0-9a-f]{64}", m["key"])
    assert m["library"] == "libops.so"  # relative to the manifest's directory
    lib = r.manifest_path.parent / m["library"]
    assert lib == r.library and lib.is_file()
    assert m["library_sha256"] == sha256(lib)
    assert m["toolchain"]["nvcc"] is None
    assert m["toolchain"]["archs"] == []
    assert Path(m["toolchain"]["cxx"]["path"]).is_absolute()
    assert re.match(r"\d+\.\d+", m["toolchain"]["cxx"]["version"])
    assert m["flags"]["opt_level"] == 0 and m["flags"]["fast_math"] is False
    by_fn = {t["function"]: t for t in m["targets"]}
    assert set(by_fn) == {"scale_f32", "pair"}
    s = by_fn["scale_f32"]
    assert s["name"] == "my.ops.scale_f32"
    assert s["platform"] == "cpu"
    assert s["arg_spec"] == ["arg", "ret", "attr.factor:float32"]
    assert (s["num_args"], s["num_rets"]) == (1, 1)
    assert s["attrs"] == [{"name": "factor", "type": "float32"}]
    assert s["command_buffer_compatible"] is True
    assert s["source"].endswith("ops.cpp:11")  # file:line of the annotation
    p = by_fn["pair"]
    assert p["arg_spec"] == ["arg", "arg", "ret", "ret", "attr.n:int32"]
    assert (p["num_args"], p["num_rets"]) == (2, 2)
    assert p["source"].endswith("ops.cpp:14")
    for t in m["targets"]:
        assert exported(lib, t["symbol"]), t["symbol"]
    assert sorted(r.info["targets"]) == ["my.ops.pair", "my.ops.scale_f32"]


def test_no_cuda_graph_names_nograph_symbols_without_a_rebuild(bekc, kernels):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    graph = bekc.build(src, FAST)
    nograph = bekc.build(src, FAST, "--no-cuda-graph")
    assert nograph.hit is True, "--no-cuda-graph must not be part of the key"
    assert nograph.key == graph.key
    assert nograph.library == graph.library
    assert nograph.manifest_path != graph.manifest_path
    g, n = graph.manifest["targets"][0], nograph.manifest["targets"][0]
    assert g["command_buffer_compatible"] is True
    assert n["command_buffer_compatible"] is False
    assert n["symbol"] == g["symbol"] + "_nograph"
    assert n["symbol"].endswith("_nograph")
    assert nograph.manifest["library_sha256"] == graph.manifest["library_sha256"]
    assert exported(graph.library, g["symbol"]) and exported(graph.library, n["symbol"])
    # And the other way round, from a cold cache.
    fresh = bekc.build(src, FAST, "--no-cuda-graph", cache_dir=bekc.cache_dir.parent / "c2")
    assert fresh.hit is False
    assert fresh.manifest["targets"][0]["symbol"].endswith("_nograph")


# --------------------------------------------------------------------------- -o DIR
def test_output_dir_holds_library_and_manifest(bekc, kernels, tmp_path):
    src = kernels.cpp(bekc.workdir / "k.cpp", value="1.0f")
    out = tmp_path / "out dir" / "nested"
    r = bekc.build(src, FAST, "-o", out)
    assert r.manifest_path == out / "manifest.json"
    assert sorted(p.name for p in out.iterdir()) == ["libk.so", "manifest.json"]
    m = json.loads((out / "manifest.json").read_text())
    assert m["library"] == "libk.so"
    assert m["library_sha256"] == sha256(out / "libk.so")
    # A hit places them too, in another directory.
    out2 = tmp_path / "out2"
    hit = bekc.build(src, FAST, "-o", out2)
    assert hit.hit is True
    assert json.loads((out2 / "manifest.json").read_text())["key"] == m["key"]
    assert sha256(out2 / "libk.so") == m["library_sha256"]
    # A changed source replaces both files in place.
    kernels.cpp(src, value="5.0f")
    changed = bekc.build(src, FAST, "-o", out)
    assert changed.hit is False
    m2 = json.loads((out / "manifest.json").read_text())
    assert m2["key"] != m["key"]
    assert m2["library_sha256"] == sha256(out / "libk.so")
    assert sorted(p.name for p in out.iterdir()) == ["libk.so", "manifest.json"]
    # The manifest path on stdout is the stable one.
    proc = bekc.run("build", src, FAST, "-o", out, "--cache-dir", bekc.cache_dir)
    assert proc.stdout.strip().splitlines()[-1] == str(out / "manifest.json")


def test_repeated_builds_into_one_output_dir_leave_nothing_behind(bekc, kernels, tmp_path):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    out = tmp_path / "out"
    for _ in range(3):
        bekc.build(src, FAST, "-o", out)
    assert sorted(p.name for p in out.iterdir()) == ["libk.so", "manifest.json"]


def test_output_dir_with_no_cuda_graph(bekc, kernels, tmp_path):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    bekc.build(src, FAST)
    r = bekc.build(src, FAST, "--no-cuda-graph", "-o", tmp_path / "o")
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert m["targets"][0]["symbol"].endswith("_nograph")


# --------------------------------------------------------------------------- --depfile
def parse_make_prereqs(text: str):
    """The first rule's target and prerequisites, unescaped as Make reads them."""
    first = text.replace("\\\n", " ").split("\n", 1)[0]
    target, rest = first.split(": ", 1)
    words = re.findall(r"(?:\\.|\S)+", rest)
    return target, [re.sub(r"\\(.)", r"\1", w).replace("$$", "$") for w in words]


def test_depfile_lists_inputs_and_user_headers(bekc, kernels, tmp_path):
    d = bekc.workdir / "dep dir"
    (d / "inc").mkdir(parents=True)
    (d / "inc" / "val.h").write_text('#include "more.h"\n#define VAL MORE\n')
    (d / "inc" / "more.h").write_text("#include <vector>\n#define MORE 2.0f\n")
    src = kernels.cpp(d / "k.cpp", includes=["val.h"], value="VAL")
    depfile = tmp_path / "k.d"
    out = tmp_path / "out"
    r = bekc.build(src, FAST, "-I", d / "inc", "--depfile", depfile, "-o", out)
    text = depfile.read_text()
    target, prereqs = parse_make_prereqs(text)
    assert prereqs[0] == str(src)
    assert str(d / "inc" / "val.h") in prereqs
    assert str(d / "inc" / "more.h") in prereqs
    assert not [p for p in prereqs if p.startswith("/usr/")], "system headers listed"
    assert not [p for p in prereqs if "brainevent" in p or str(bekc.cache_dir) in p]
    assert not [p for p in prereqs if ".bekc." in p], "generated wrappers listed"

    # Make itself agrees: the target is up to date now, and out of date after
    # a header changes. (A pattern rule gives the target a recipe.)
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make")
    (tmp_path / "Makefile").write_text("include k.d\n%.json:\n\t@echo REBUILD $@\n")
    tgt = str(r.manifest_path)

    def make_(*flags):
        return subprocess.run([make, *flags, tgt], cwd=tmp_path, capture_output=True, text=True)

    assert make_("-q").returncode == 0, text
    future = time.time() + 100
    os.utime(d / "inc" / "more.h", (future, future))
    assert make_("-q").returncode == 1, text
    # Deleting a header must not break make (every header has an empty rule).
    (d / "inc" / "more.h").unlink()
    proc = make_()
    assert proc.returncode == 0 and "REBUILD" in proc.stdout, proc.stderr


def test_depfile_on_a_hit(bekc, kernels, tmp_path):
    src = kernels.cpp(bekc.workdir / "k.cpp", includes=["val.h"], value="VAL")
    (bekc.workdir / "val.h").write_text("#define VAL 1.0f\n")
    bekc.build(src, FAST)
    depfile = tmp_path / "hit.d"
    r = bekc.build(src, FAST, "--depfile", depfile)
    assert r.hit is True
    _, prereqs = parse_make_prereqs(depfile.read_text())
    assert prereqs == [str(src), str(bekc.workdir / "val.h")]


# --------------------------------------------------------------------------- awkward paths
AWKWARD = "my kernels 'v2' $HOME ünï 核"


def test_awkward_paths_cpu_build(bekc, kernels, tmp_path):
    """No shell anywhere: every path of a .cpp build (source, -I, cache, -o,
    depfile) has spaces, a single quote, a dollar sign and non-ASCII letters."""
    d = bekc.workdir / AWKWARD
    (d / "inc 'lude'").mkdir(parents=True)
    (d / "inc 'lude'" / "val ue.h").write_text("#define VAL 2.0f\n")
    src = kernels.cpp(d / "hö st.cpp", fn="host_fn", includes=["val ue.h"], value="VAL")
    cache = tmp_path / "cache 'c' $USER ü"
    out = tmp_path / "out 'o' ü"
    depfile = tmp_path / "dep 'file'.d"
    args = [src, FAST, "--name", "host", "-I", d / "inc 'lude'", "-D", "MSG='a b' \"c\"",
            "-o", out, "--depfile", depfile]
    r = bekc.build(*args, cache_dir=cache)
    m = json.loads((out / "manifest.json").read_text())
    assert m["targets"][0]["source"].endswith("hö st.cpp:3")
    assert m["library_sha256"] == sha256(out / "libhost.so")
    assert m["flags"]["defines"] == ["MSG='a b' \"c\""]
    _, prereqs = parse_make_prereqs(depfile.read_text())
    assert prereqs == [str(src), str(d / "inc 'lude'" / "val ue.h")]
    assert bekc.build(*args, cache_dir=cache).hit is True


def test_awkward_paths_mixed_cuda_build(bekc, kernels, nvcc, tmp_path):
    """A mixed .cu + .cpp build (compile each, link with nvcc) in a directory
    whose name has spaces, a single quote, a dollar sign and non-ASCII."""
    d = bekc.workdir / AWKWARD
    d.mkdir(parents=True)
    (d / "val ue.h").write_text("#define VAL 2.0f\n")
    cu = kernels.cu(d / "dev ice.cu", fn="dev_fn", includes=["val ue.h"], value="VAL")
    cpp = kernels.cpp(d / "hö st.cpp", fn="host_fn", includes=["val ue.h"], value="VAL")
    out = tmp_path / "out 'o' ü"
    depfile = tmp_path / "dep file.d"
    args = [cu, cpp, "--arch", "sm_90", FAST, "--name", "mixed"]
    r = bekc.build(*args, "-o", out, "--depfile", depfile)
    m = json.loads((out / "manifest.json").read_text())
    assert {t["function"]: t["platform"] for t in m["targets"]} == {"dev_fn": "CUDA",
                                                                   "host_fn": "cpu"}
    assert m["toolchain"]["archs"] == ["sm_90"]
    assert m["library_sha256"] == sha256(out / "libmixed.so")
    for t in m["targets"]:
        assert exported(out / "libmixed.so", t["symbol"]), t["symbol"]
    _, prereqs = parse_make_prereqs(depfile.read_text())
    assert prereqs[:2] == [str(cu), str(cpp)]
    assert str(d / "val ue.h") in prereqs
    assert bekc.build(*args).hit is True


def test_manifest_lists_every_architecture_built(bekc, kernels, nvcc):
    """toolchain.archs holds every SASS architecture the library carries:
    --arch's and those the user's own nvcc options ask for."""
    cu = kernels.cu(bekc.workdir / "dev.cu", fn="dev_fn")
    both = bekc.build(cu, FAST, "--arch", "sm_80", "--cuda-flag=-arch=sm_86")
    assert both.manifest["toolchain"]["archs"] == ["sm_80", "sm_86"]
    gencode = bekc.build(cu, FAST, "--arch", "sm_90", "--cuda-flag=-gencode",
                         "--cuda-flag=arch=compute_75,code=sm_75")
    assert gencode.manifest["toolchain"]["archs"] == ["sm_75", "sm_90"]


def test_arch_auto_without_gpu_warns_when_it_compiles_not_on_a_hit(bekc, kernels, nvcc):
    """The fallback to sm_80 is said when a build compiles for it; a hit
    compiles nothing and says nothing."""
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU may be present: auto would pick it")
    cu = kernels.cu(bekc.workdir / "dev.cu", fn="dev_fn")
    first = bekc.build(cu, FAST)
    assert first.stderr.count("warning") == 1 and "sm_80" in first.stderr, first.stderr
    assert "--arch" in first.stderr and first.manifest["toolchain"]["archs"] == ["sm_80"]
    again = bekc.build(cu, FAST)
    assert again.hit and again.stderr == ""
    named = bekc.build(cu, FAST, "--cuda-flag=-arch=sm_86")
    assert named.stderr == "" and named.manifest["toolchain"]["archs"] == ["sm_86"]


def test_cuda_build_with_a_quote_in_the_cache_dir(bekc, kernels, nvcc, tmp_path):
    cu = kernels.cu(bekc.workdir / "dev.cu", fn="dev_fn")
    r = bekc.build(cu, "--arch", "sm_90", FAST, cache_dir=tmp_path / "o'brien cache", ok=None)
    assert r.rc == 0, r.describe()


def test_cuda_build_with_a_quote_in_an_include_dir(bekc, kernels, nvcc, tmp_path):
    inc = tmp_path / "it's here"
    inc.mkdir()
    (inc / "val.h").write_text("#define VAL 2.0f\n")
    cu = kernels.cu(bekc.workdir / "dev.cu", fn="dev_fn", includes=["val.h"], value="VAL")
    r = bekc.build(cu, "--arch", "sm_90", FAST, "-I", inc, ok=None)
    assert r.rc == 0, r.describe()


INJECTION = "co$(cd;touch PWNED)"  # run by a shell: creates $HOME/PWNED


@pytest.fixture
def injected_checkout(bekc, kernels, tmp_path):
    """A checkout whose directory name is a command substitution (a branch
    name, an archive's top directory, a CI job's path), with a header in
    inc/, a kernel, and a HOME where the command would leave its mark."""
    home = tmp_path / "home"
    home.mkdir()
    checkout = bekc.workdir / INJECTION
    (checkout / "inc").mkdir(parents=True)
    (checkout / "inc" / "val.h").write_text("#define VAL 2.0f\n")
    cu = kernels.cu(checkout / "dev.cu", fn="dev_fn", includes=["val.h"], value="VAL")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEKC_")}
    env.update(HOME=str(home), BEKC_BASE_DIR=str(checkout))
    return checkout, cu, env, home / "PWNED"


def test_a_checkout_named_with_shell_syntax_runs_nothing(bekc, injected_checkout, nvcc):
    """With base_dir set, every nvcc compile got -Xcompiler
    -ffile-prefix-map=<checkout>=., which nvcc hands to a shell unquoted: the
    checkout's name ran, and the build still exited 0. The host compiler
    reached through a directory of that name (-ccbin) is quoted by nvcc only
    partly, so it goes through a plain-named link too."""
    checkout, cu, env, mark = injected_checkout
    (checkout / "bin").mkdir()
    cxx = shutil.which("g++") or shutil.which("c++")
    (checkout / "bin" / "g++").symlink_to(cxx)
    r = bekc.build(cu, "--arch", "sm_90", FAST, "-I", checkout / "inc", env=env,
                   cwd=checkout, ok=None)
    assert not mark.exists(), "the checkout's name ran as a command"
    assert r.rc == 0, r.describe()
    r = bekc.build(cu, "--arch", "sm_90", FAST, "-I", checkout / "inc", "--cxx",
                   checkout / "bin" / "g++", env=env, cwd=checkout, ok=None)
    assert not mark.exists(), "the host compiler's directory ran as a command"
    assert r.rc == 0, r.describe()


@pytest.mark.parametrize("option", ["-D", "--cuda-flag", "--ldflag"])
def test_a_checkout_path_with_shell_syntax_in_a_flag_is_refused(bekc, injected_checkout, nvcc,
                                                               option):
    """-D DATADIR=<checkout>/data (and any flag nvcc hands to its shell)
    ran the checkout's name; a CUDA build now refuses it, exit 2."""
    checkout, cu, env, mark = injected_checkout
    value = {"-D": f"DATADIR={checkout}/data",
             "--cuda-flag": f"-Xcompiler=-fdebug-prefix-map={checkout}=.",
             "--ldflag": f"-Wl,-rpath,{checkout}/lib"}[option]
    given = [option, value] if option == "-D" else [f"{option}={value}"]
    r = bekc.build(cu, "--arch", "sm_90", FAST, *given, env=env, cwd=checkout, ok=None)
    assert not mark.exists(), "the checkout's name ran as a command"
    assert r.rc == 2, r.describe()
    assert (f"bekc: error: {option} '{value}' has '$', which nvcc hands to a shell that would "
            "run or expand it; a CUDA build cannot pass it (use a path without it, or a link "
            "to it)") in r.stderr, r.describe()


def test_path_with_a_double_quote_is_refused_clearly(bekc, kernels):
    src = kernels.cpp(bekc.workdir / 'say "hi"' / "k.cpp")
    r = bekc.build(src, FAST, ok=False)
    assert r.rc == 2
    assert "rename" in r.stderr


# --------------------------------------------------------------------------- paths not UTF-8
# A Linux file name is bytes: b"caf\xe9" (Latin-1) is a legal directory name.
# Python spells it "caf\udce9" (os.fsdecode), and JSON text holds it as the
# escape "\udce9", which json.loads reads back to that spelling.
NOT_UTF8 = os.fsdecode(b"caf\xe9")


def build_bytes(bekc, *args, cache_dir=None, env=None):
    """`bekc build ARGS --json` with bytes for output (its messages may hold
    such paths): the process, and the --json object when it exited 0."""
    argv = bekc.build_argv(*args, cache_dir=cache_dir)
    proc = subprocess.run(argv, cwd=bekc.workdir, env=env, capture_output=True, timeout=300)
    info = json.loads(proc.stdout.splitlines()[-1]) if proc.returncode == 0 else None
    return proc, info


def json_of(path: Path):
    return json.loads(Path(path).read_bytes())


def test_a_build_below_a_directory_whose_name_is_not_utf8(bekc, kernels, tmp_path):
    """The input, its header, -I, -D, -o, --depfile, --compile-commands and
    the build log below such a directory: the build succeeds, every JSON file
    bekc writes holds the paths byte for byte, and the second build is a hit."""
    d = bekc.workdir / NOT_UTF8
    (d / "inc").mkdir(parents=True)
    header = d / "inc" / "val.h"
    header.write_text("#define VAL 2.0f\n")
    src = kernels.cpp(d / "k.cpp", includes=["val.h"], value="VAL")
    out, depfile, commands, log = d / "out", d / "k.d", d / "cc.json", d / "log.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEKC_")}
    env["BEKC_LOG"] = str(log)
    args = [src, FAST, "-I", d / "inc", "-D", f"WHERE={d}", "-o", out, "--depfile", depfile,
            "--compile-commands", commands]
    proc, first = build_bytes(bekc, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert first["cache_hit"] is False
    assert first["manifest"] == str(out / "manifest.json")
    manifest = json_of(out / "manifest.json")
    assert manifest["targets"][0]["source"] == f"{src}:3"
    assert manifest["flags"]["include_dirs"] == [str(d / "inc")]
    assert manifest["flags"]["defines"] == [f"WHERE={d}"]
    assert manifest["library_sha256"] == sha256(out / "libk.so")
    _, prereqs = parse_make_prereqs(os.fsdecode(depfile.read_bytes()))
    assert prereqs == [str(src), str(header)]
    assert [e["file"] for e in json_of(commands)] == [str(src)]
    assert json.loads(log.read_bytes().splitlines()[0])["inputs"] == [str(src)]
    assert str(src) in json_of(bekc.cache_dir / "timings.json")
    (entry,) = bekc.entries()
    assert json_of(entry / "dependencies.json") == [str(header)]

    proc, second = build_bytes(bekc, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert second["cache_hit"] is True
    assert [e["file"] for e in json_of(commands)] == [str(src)]
    assert bekc.cache("verify").returncode == 0
    header.write_text("#define VAL 3.0f\n")
    assert build_bytes(bekc, *args, env=env)[1]["cache_hit"] is False


def test_a_compiler_at_a_path_that_is_not_utf8(bekc, kernels, tmp_path):
    """--cxx below such a directory: the build succeeds, the manifest and
    tools.json name the compiler as it is, and the next build is a hit."""
    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no host compiler")
    cxx = tmp_path / NOT_UTF8 / "g++"
    cxx.parent.mkdir()
    cxx.write_text(f'#!/bin/sh\nexec "{gxx}" "$@"\n')
    cxx.chmod(0o755)
    src = kernels.cpp(bekc.workdir / "k.cpp")
    proc, first = build_bytes(bekc, src, FAST, "--cxx", cxx)
    assert proc.returncode == 0, proc.stderr
    assert json_of(first["manifest"])["toolchain"]["cxx"]["path"] == str(cxx)
    assert any(k.startswith(str(cxx)) for k in json_of(bekc.cache_dir / "tools.json"))
    proc, second = build_bytes(bekc, src, FAST, "--cxx", cxx)
    assert proc.returncode == 0 and second["cache_hit"] is True, proc.stderr


def test_a_cache_directory_whose_name_is_not_utf8(bekc, kernels, tmp_path):
    """--cache-dir below such a directory: --json names the manifest and the
    library byte for byte, a second build hits, and the cache commands work."""
    cache = tmp_path / NOT_UTF8 / "cache"
    src = kernels.cpp(bekc.workdir / "k.cpp")
    for hit in (False, True):
        proc, info = build_bytes(bekc, src, FAST, cache_dir=cache)
        assert proc.returncode == 0, proc.stderr
        assert info["cache_hit"] is hit
        assert Path(info["manifest"]).is_relative_to(cache)
        assert Path(info["library"]).is_file()
    for command in ("stats", "ls", "verify"):
        proc = subprocess.run([str(bekc.binary), "cache", command, "--cache-dir", str(cache)],
                              capture_output=True, timeout=60)
        assert proc.returncode == 0, (command, proc.stderr)


def test_a_cuda_build_with_a_cache_and_include_dir_whose_names_are_not_utf8(bekc, kernels, nvcc,
                                                                           tmp_path):
    """nvcc's front end refuses a __FILE__ that is not UTF-8, as bekc's
    runtime headers expand it: a cache below such a directory reaches nvcc
    through a plain-named link. The build succeeds and then hits, and the
    user's header is recorded as the user named it."""
    latin = tmp_path / NOT_UTF8
    (latin / "inc").mkdir(parents=True)
    (latin / "inc" / "val.h").write_text("#define VAL 2.0f\n")
    cu = kernels.cu(bekc.workdir / "dev.cu", fn="dev_fn", includes=["val.h"], value="VAL")
    args = [cu, "--arch", "sm_90", FAST, "-I", latin / "inc"]
    for hit in (False, True):
        proc, info = build_bytes(bekc, *args, cache_dir=latin / "cache")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert info["cache_hit"] is hit
    assert json_of(Path(info["manifest"]).parent / "dependencies.json") == [
        str(latin / "inc" / "val.h")]


def test_inspect_json_of_an_input_whose_path_is_not_utf8(bekc, kernels):
    src = kernels.cpp(bekc.workdir / NOT_UTF8 / "k.cpp")
    proc = subprocess.run([str(bekc.binary), "inspect", str(src), "--json"],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [f["path"] for f in json.loads(proc.stdout)["files"]] == [str(src)]
