"""bekc's Python loaders and the C++ driver write one build's command alike.

The package prebuild (`bekc build <package>`) writes each module's command
with C++'s to_argv (prep/build_args); the loaders write theirs with
Python's build_argv. For a handful of option sets, given once as the
prebuild's options and once as the loaders' keyword arguments, the two
commands parse, in a dry run, to the same cache key records
(`--dry-run --explain-key`): nothing is compiled. A compute capability in a
spelling only brainevent's rule reads ("SM_86", "sm_8.6") gives the same key
as the canonical spelling on the command line.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from prebuild import REPO, jaxlib_package, make_site, prebuild, without_venv

sys.path.insert(0, str(REPO / "python"))
from bekc import build_argv  # noqa: E402

KERNEL = """\
#include "brainevent/common.h"
// @BE {fn}
void {fn}(const BE::Tensor x, BE::Tensor out{stream}) {{}}
"""

OPS_PY = """\
from pathlib import Path
from bekc import load_cpp_file, load_cuda_file


def load_all():
    load_cuda_file(Path(__file__).with_name("gpu.cu"))
    load_cpp_file(Path(__file__).with_name("cpu.cpp"))
"""


@pytest.fixture
def site(tmp_path):
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    include = REPO / "runtime" / "include" / "brainevent"
    files = {f"include/brainevent/{h.name}": h for h in include.glob("*.h")}
    files.update({"_ops/__init__.py": "", "_ops/ops.py": OPS_PY,
                  "_ops/gpu.cu": KERNEL.format(fn="gpu", stream=", int64_t stream"),
                  "_ops/cpu.cpp": KERNEL.format(fn="cpu", stream="")})
    (tmp_path / "extra").mkdir()
    return make_site(tmp_path, files)


def children(bekc, site, *options) -> dict:
    """The prebuild's command for each module (C++'s to_argv), by module name."""
    planned = prebuild(bekc, site, *options, dry_run=True)
    assert planned.returncode == 0, planned.stderr
    out = {}
    for line in planned.stdout.splitlines():
        argv = shlex.split(line)
        name = next(a.split("=", 1)[1] for a in argv if a.startswith("--name="))
        out[name] = argv
    assert set(out) == {"gpu", "cpu"}, planned.stdout
    return out


def value(argv, option):
    return next(a.split("=", 1)[1] for a in argv if a.startswith(option + "="))


def key_records(argv, env) -> str:
    """What the cache key of ARGV hashes, from a dry run that compiles nothing."""
    r = subprocess.run([str(a) for a in argv] + ["--dry-run", "--explain-key"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    # The records come first; the commands after them ("# wave 1: ...") also
    # show -j, which is no part of the key.
    records = r.stdout.split("\n# ", 1)[0]
    assert records.startswith("6:format "), r.stdout
    return records


# (the prebuild's options, the loaders' keyword arguments for the same build)
OPTION_SETS = [
    (["--arch=sm_86"], dict(compute_capability="SM_86")),
    (["--arch=sm_80,sm_90"], dict(compute_capability=["9.0", "80"])),
    (["--arch=86", "-O1", "--fast-math"],
     dict(compute_capability="8.6", optimization_level=1, use_fast_math=True)),
    (["--arch=sm_90a", "-I", "{extra}", "--cuda-flag=-lineinfo"],
     dict(compute_capability="9.0a", extra_include_paths=["{extra}"],
          extra_flags={"cuda": ["-lineinfo"], "cxx": []})),
    (["--arch=sm_80", "-O0", "--no-cuda-graph", "--force"],
     dict(compute_capability="compute_80", optimization_level=0, allow_cuda_graph=False,
          force_rebuild=True)),
]


@pytest.mark.parametrize("options, kwargs", OPTION_SETS,
                         ids=[" ".join(o) for o, _ in OPTION_SETS])
def test_prebuild_and_build_argv_give_one_key(bekc, nvcc, site, options, kwargs):
    extra = str(site.parent / "extra")
    options = [o.replace("{extra}", extra) for o in options]
    cpp_side = children(bekc, site, *options)
    env = without_venv(site.parent, BEKC_NVCC=nvcc)
    package = site / "brainevent"
    for name, kind in (("gpu", "cuda"), ("cpu", "cxx")):
        child = cpp_side[name]
        kw = dict(kwargs)
        if kind == "cxx":
            kw.pop("compute_capability", None)  # the loaders pass none for C++
        if isinstance(kw.get("extra_flags"), dict):
            kw["extra_flags"] = kw["extra_flags"][kind]
        kw["extra_include_paths"] = [p.replace("{extra}", extra)
                                     for p in kw.get("extra_include_paths", [])]
        ours = build_argv([child[2]], name=name, flag_kind=kind, binary=str(bekc.binary),
                          cache_dir=value(child, "--cache-dir"),
                          brainevent_include=str((package / "include").resolve()),
                          xla_include=value(child, "--xla-include"), **kw)
        want = key_records(child, env)
        assert "sm_" in want or kind == "cxx"
        assert key_records(ours, env) == want, (name, child, ours)


def test_a_python_spelling_gives_the_cli_spellings_key(bekc, nvcc, tmp_path):
    """compute_capability="sm_8.6" (brainevent's rule; the loaders pass it as
    written) and `--arch sm_86` on the command line are one build."""
    src = tmp_path / "k.cu"
    src.write_text(KERNEL.format(fn="k", stream=", int64_t stream"))
    env = without_venv(tmp_path, BEKC_NVCC=nvcc)
    cache = str(tmp_path / "cache")
    ours = build_argv([src], name="k", compute_capability=["sm_8.6", " .80"],
                      binary=str(bekc.binary), cache_dir=cache)
    assert "--arch=sm_8.6,.80" in ours
    cli = [bekc.binary, "build", src, "--name=k", "--arch", "sm_80,sm_86", "--cache-dir", cache]
    assert key_records(ours, env) == key_records(cli, env)
    other = [bekc.binary, "build", src, "--name=k", "--arch", "sm_86", "--cache-dir", cache]
    assert key_records(ours, env) != key_records(other, env)
