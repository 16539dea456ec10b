"""brainevent's own kernel files, built by bekc one by one and as a package, for each
release of tests/brainevent_releases.py: 0.2.1 (pinned in
requirements-test.txt) and 0.3.0, the newest (installed by scripts/setup.sh
into .deps/). The tests find each package without importing it for the paths,
and use brainevent's own annotation parser (``brainevent._op.kernix_codegen``,
byte-identical in both releases) as the oracle for target names and specs.

CI builds a sample per release: for 0.2.1 every kind of file that failed
before (the CSR dispatch macros, a source that includes XLA's ``ffi.h``
directly, one that includes ``brainevent/dtypes.h``, the cuBLAS one with its
linker arguments), for 0.3.0 one file of its new ``_tcsr`` package and one
other; once against brainevent's own headers (``-I <package>/include``), once
against bekc's copies (only ``cuda_common.h`` taken from brainevent). All
files of both releases (45 and 61) are built by
``scripts/build_brainevent_kernels.sh`` (too slow for a 2-core CI run), which
sets BEKC_ALL_BRAINEVENT_KERNELS=1.

The package plan (``bekc build <package> --dry-run``) is checked for each
release against every ``load_cuda_file`` call brainevent makes with a literal
name, found with Python's own parser and pathlib; and on a small sample of each
release, after ``bekc build <package>``, each such load through bekc's loader
is a cache hit on the prebuilt module.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prebuild import jaxlib_package, loads_through_bekc, make_site, prebuild  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from brainevent_releases import RELEASES  # noqa: E402

ALL = os.environ.get("BEKC_ALL_BRAINEVENT_KERNELS") == "1"
ARCH = "sm_90"


def _xla_include() -> Path | None:
    spec = importlib.util.find_spec("jaxlib")
    if not spec or not spec.origin:
        return None
    inc = Path(spec.origin).parent / "include"
    return inc.resolve() if (inc / "xla/ffi/api/ffi.h").is_file() else None


# The tests that are not about a release use the pinned one.
PACKAGE = RELEASES["0.2.1"]
pytestmark = pytest.mark.skipif(PACKAGE is None, reason="brainevent 0.2.1 is not installed")

# binary_csrmv_hybrid.cu (brainevent/dtypes.h) is built against bekc's headers
# below; against brainevent's own it adds 17 s and no new kind. 0.3.0: its
# cheapest files (10 and 14 s on 2 cores).
SUBSET = {"0.2.1": ["_csr/csr_to_csc.cu", "_csr/plasticity_binary_on_post.cu",
                    "_csr/binary_indexed_csrmv_hybrid.cu", "_dense/binary_dense_cublas.cu"],
          "0.3.0": ["_tcsr/sddmm/sddmv_float.cu"]}
BEKC_HEADERS_SUBSET = {"0.2.1": ["_csr/csr_to_csc.cu", "_csr/plasticity_binary_on_post.cu",
                                 "_csr/binary_csrmv_hybrid.cu"],
                       "0.3.0": ["_csr/slice_csr_slice_rows.cu"]}


# Files a release's own pipeline cannot build either: expected to fail.
PACKAGE_DEFECTS = {("0.3.0", "_tcsr/tile_mm/binary_csrmm_tile.cu"):
                   "includes bn_tile.cuh, which the 0.3.0 wheel does not ship"}


def kernels(version: str) -> list:
    package = RELEASES[version]
    return sorted(package.rglob("*.cu")) if package else []


def _rel(path: Path, package: Path = PACKAGE) -> str:
    return path.relative_to(package).as_posix()


def _files(subsets):
    """pytest params (release, kernel file) for each release's sample, or all."""
    out = []
    for version in sorted(RELEASES):
        package = RELEASES[version]
        if package is None:
            out.append(pytest.param(version, None, id=f"{version}-not-installed"))
            continue
        for k in kernels(version):
            rel = _rel(k, package)
            if not (ALL or rel in subsets.get(version, [])):
                continue
            defect = PACKAGE_DEFECTS.get((version, rel))
            marks = [pytest.mark.xfail(reason=defect, strict=True)] if defect else []
            out.append(pytest.param(version, k, id=f"{version}/{rel}", marks=marks))
    return out


def release(version: str) -> Path:
    package = RELEASES[version]
    if package is None:
        pytest.skip(f"brainevent {version} is not installed (scripts/setup.sh puts 0.3.0 "
                    f"in .deps/)")
    return package


def brainevent_specs(source: Path) -> dict:
    """{function: canonical arg_spec tokens}, by brainevent's own parser."""
    from brainevent._op.kernix_codegen import (
        normalize_tokens, parse_annotations, resolve_bare_attr_types)
    text = source.read_text(encoding="utf-8")
    return {fn: resolve_bare_attr_types(normalize_tokens(toks), fn, text)
            for fn, toks in parse_annotations(text).items()}


def literal_loads(package: Path) -> dict:
    """{(kernel file, module name): site} for every ``load_cuda_file(PATH, ...)``
    call in the package's Python modules whose name is a literal (or absent:
    the file's stem, as brainevent's loader takes) and whose other keywords
    leave the build unchanged: found with Python's own parser, the path
    evaluated by pathlib itself with ``__file__`` bound, independently of bekc."""
    neutral = {"name", "allow_cuda_graph", "verbose", "auto_register", "replace",
               "force_rebuild"}
    out = {}
    for py in package.rglob("*.py"):
        if py.name.endswith("_test.py"):
            continue
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "load_cuda_file"):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            name = kw.get("name")
            if len(node.args) != 1 or set(kw) - neutral or not (
                    name is None or isinstance(name, ast.Constant)):
                continue
            try:
                path = eval(compile(ast.Expression(node.args[0]), str(py), "eval"),
                            {"__builtins__": {}, "Path": Path, "pathlib": pathlib,
                             "__file__": str(py)})
            except Exception:  # a variable, a conditional: computed, not literal
                continue
            path = Path(path).resolve()
            if path.is_file():
                out[(path, name.value if name is not None else path.stem)] = \
                    f"{py.relative_to(package)}:{node.lineno}"
    return out


def assert_brainevent_targets(manifest: dict, source: Path, name: str,
                              package: Path = PACKAGE) -> None:
    want = {f"{name}.{fn}": spec for fn, spec in brainevent_specs(source).items()}
    got = {t["name"]: t["arg_spec"] for t in manifest["targets"]}
    assert got == want, f"{_rel(source, package)}: targets differ from brainevent's parser"


def cublas_linker_args() -> list:
    """What brainevent passes for its cuBLAS kernel: the library, then an rpath."""
    lib = Path("/usr/local/cuda/lib64/libcublas.so.13")
    if not lib.is_file():
        pytest.skip("no libcublas.so.13 in /usr/local/cuda/lib64")
    return [f"--linker-arg={lib}", f"--linker-arg=-rpath={lib.parent}"]


def build_kernel(bekc, source: Path, include: Path, name: str, timeout=900):
    args = [source, "--name", name, "-I", include, "--arch", ARCH]
    xla = _xla_include()
    if xla:
        args.append(f"--xla-include={xla}")
    if source.name == "binary_dense_cublas.cu":
        args += cublas_linker_args()
    return bekc.build(*args, timeout=timeout)


# --------------------------------------------------------------------------- package plan
def planned_modules(bekc, package: Path) -> tuple:
    """({kernel file: {module names}}, the summary line) of the dry run."""
    proc = bekc.run("build", package, "--dry-run", "--arch", ARCH, "--cache-dir", bekc.cache_dir)
    assert proc.returncode == 0, proc.stderr
    planned = {}
    for line in proc.stdout.splitlines():
        argv = shlex.split(line)
        # One job-slot count per child (-jN), which the package build chose.
        assert argv[1] == "build" and len([a for a in argv if re.fullmatch(r"-j[0-9]+", a)]) == 1, line
        name = next(a.split("=", 1)[1] for a in argv if a.startswith("--name="))
        planned.setdefault(Path(argv[2]), set()).add(name)
        assert f"-I{package / 'include'}" in argv, line
    return planned, proc.stderr.splitlines()[0]


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_package_build_plans_every_kernel_file_under_brainevents_names(bekc, version):
    package = release(version)
    planned, summary = planned_modules(bekc, package)
    assert set(planned) == set(kernels(version)), "every kernel file is built"
    loads = literal_loads(package)
    assert len(loads) >= 30, "brainevent loads most of its files by a literal name"
    for (path, name), site in loads.items():
        assert name in planned[path], f"{site}: {_rel(path, package)} as {name} is not prebuilt"
    owners = {}
    for path, names in planned.items():
        for name in names:
            assert name not in owners, (f"{_rel(path, package)} and {_rel(owners[name], package)}"
                                        f" are both built as {name}")
            owners[name] = path
    as_loaded = len({key for key in loads})
    assert summary.startswith(f"bekc: package {package}: {len(planned)} kernel files, "
                              f"{as_loaded} modules as the package loads them, "), summary


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_after_the_prebuild_brainevents_loads_are_cache_hits(bekc, nvcc, version, tmp_path):
    """A sample of the release (a Python module and the kernel file it loads)
    in a site-packages of its own, with jaxlib beside it; after `bekc build
    <package>`, bekc's load_cuda_file for each of its literal loads returns
    the prebuilt module from the cache."""
    package = release(version)
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    sample = {"0.2.1": ["_misc.py", "_csr/csr_to_csc.cu"],
              "0.3.0": ["_tcsr/sddmm/sddmm.py", "_tcsr/sddmm/sddmv_float.cu"]}[version]
    files = {str(p.relative_to(package)): p for p in (package / "include").rglob("*")
             if p.is_file()}
    files.update({rel: package / rel for rel in sample})
    site = make_site(tmp_path, files)
    copy = (site / "brainevent").resolve()
    built = prebuild(bekc, site, "--arch", ARCH, "-j", "2")
    assert built.returncode == 0, built.stderr
    modules = {m["name"]: m for m in json.loads(built.stdout.splitlines()[-1])["modules"]}
    loads = literal_loads(copy)
    assert loads, f"the sample {sample} has no literal load"
    calls = [["load_cuda_file", str(path), name] for path, name in loads]
    records = loads_through_bekc(bekc, site, calls, stop=True,
                                 BRAINEVENT_COMPUTE_CAPABILITIES=ARCH)
    assert [r["name"] for r in records] == [name for _, name in loads]
    for r in records:
        assert r["cache_hit"] and r["manifest"] == modules[r["name"]]["manifest"], r


@pytest.mark.parametrize("version, source", _files(SUBSET))
def test_kernel_builds_against_brainevents_headers(bekc, nvcc, version, source):
    package = release(version)
    build = build_kernel(bekc, source, package / "include", "be_" + source.stem)
    assert_brainevent_targets(build.manifest, source, "be_" + source.stem, package)


@pytest.mark.parametrize("version, source", _files(BEKC_HEADERS_SUBSET))
def test_kernel_builds_against_bekcs_headers(bekc, nvcc, version, source, tmp_path):
    """Only cuda_common.h comes from brainevent: every brainevent/ header the
    kernel includes is bekc's own copy."""
    package = release(version)
    include = tmp_path / "include"
    include.mkdir()
    shutil.copy(package / "include" / "cuda_common.h", include)
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    build = build_kernel(bekc, copy, include, "bekc_" + source.stem)
    assert_brainevent_targets(build.manifest, source, "bekc_" + source.stem, package)
    deps = json.loads((build.manifest_path.parent / "dependencies.json").read_text())
    assert not any("/brainevent/" in d for d in deps), deps


# --------------------------------------------------------------------------- XLA's headers
FFI_SOURCE = "_csr/binary_indexed_csrmv_hybrid.cu"


def _no_jaxlib_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "BEKC_XLA_INCLUDE")}
    env.update(PATH="/usr/bin:/bin", HOME=str(tmp_path / "home"), **extra)
    return env


def _has_system_jaxlib() -> bool:
    return any(Path(p).is_dir() for p in
               ["/usr/local/lib/python3.11/dist-packages/jaxlib",
                "/usr/lib/python3/dist-packages/jaxlib"])


def test_missing_xla_headers_is_an_error_at_the_include_line(bekc, nvcc, tmp_path):
    if _has_system_jaxlib():
        pytest.skip("a system-wide jaxlib is installed")
    source = PACKAGE / FFI_SOURCE
    line = next(i for i, l in enumerate(source.read_text().splitlines(), 1)
                if re.match(r'\s*#\s*include\s*"xla/ffi/api/ffi.h"', l))
    build = bekc.build(source, "-I", PACKAGE / "include", "--arch", ARCH, ok=False,
                       env=_no_jaxlib_env(tmp_path))
    assert build.rc == 1
    assert f"{source}:{line}:1: error: 'xla/ffi/api/ffi.h' needs XLA's FFI headers" in build.stderr
    for fix in ("--xla-include DIR", "$BEKC_XLA_INCLUDE=DIR", "virtualenv"):
        assert fix in build.stderr
    assert bekc.entries() == [], "a failed build is never cached"


def test_xla_headers_from_the_environment_and_active_virtualenv(bekc, nvcc, tmp_path):
    xla = _xla_include()
    if xla is None:
        pytest.skip("jaxlib has no FFI headers here")
    source = PACKAGE / "_csr/csr_to_csc.cu"
    shutil.copy(source, tmp_path / "ffi_user.cu")
    text = '#include "xla/ffi/api/ffi.h"\n' + source.read_text()
    (tmp_path / "ffi_user.cu").write_text(text)
    # $BEKC_XLA_INCLUDE
    b = bekc.build(tmp_path / "ffi_user.cu", "-I", PACKAGE / "include", "--arch", ARCH,
                   "--explain-key", env=_no_jaxlib_env(tmp_path, BEKC_XLA_INCLUDE=str(xla)))
    assert "-I" + str(xla) in b.proc.stdout  # the compile command, in the key
    # The active virtualenv: the same directory, so the same key (a hit).
    venv = Path(importlib.util.find_spec("jaxlib").origin).parents[4]
    again = bekc.build(tmp_path / "ffi_user.cu", "-I", PACKAGE / "include", "--arch", ARCH,
                       env=_no_jaxlib_env(tmp_path, VIRTUAL_ENV=str(venv)))
    assert again.hit and again.key == b.key
    # A named directory without ffi.h is a usage error that names it.
    bad = bekc.build(tmp_path / "ffi_user.cu", f"--xla-include={tmp_path}", ok=False)
    assert bad.rc == 2 and str(tmp_path) in bad.stderr and "xla/ffi/api/ffi.h" in bad.stderr


# --------------------------------------------------------------------------- include order
CPU_KERNEL = """\
#include "brainevent/common.h"
#ifndef USER_COPY_OF_BRAINEVENT
#error "bekc's copy of brainevent/common.h was used instead of the user's"
#endif
// @BE add_one
void add_one(const BE::Tensor x, BE::Tensor out) {
    const float* in = static_cast<const float*>(x.data_ptr());
    float* o = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = in[i] + 1.0f;
}
"""


def _user_copy_of_brainevent(root: Path) -> Path:
    """brainevent's real headers under ROOT/brainevent, marked."""
    dst = root / "brainevent"
    shutil.copytree(PACKAGE / "include" / "brainevent", dst)
    common = dst / "common.h"
    common.write_text(common.read_text() + "\n#define USER_COPY_OF_BRAINEVENT 1\n")
    return root


def test_user_include_dir_wins_over_bekcs_copy_and_handlers_work_with_it(bekc, tmp_path):
    """brainevent's own BE::Tensor (another layout than bekc's) reaches the
    kernel intact: the handler builds it in the wrapper, not in bekc_rt.o."""
    inc = _user_copy_of_brainevent(tmp_path / "inc")
    src = tmp_path / "k.cpp"
    src.write_text(CPU_KERNEL)
    build = bekc.build(src, "-I", inc)
    script = (
        "import sys, numpy as np, jax.numpy as jnp, bekc\n"
        "m = bekc.load(sys.argv[1])\n"
        "y = m.add_one(jnp.arange(5, dtype=jnp.float32))\n"
        "assert np.allclose(np.asarray(y), np.arange(5) + 1), y\n"
        "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "python"),
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([os.sys.executable, "-c", script, str(build.manifest_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_user_header_that_comes_to_shadow_bekcs_copy_is_a_miss(bekc, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    src = tmp_path / "k.cpp"
    src.write_text(CPU_KERNEL.replace("#ifndef USER_COPY_OF_BRAINEVENT", "#if 0"))
    first = bekc.build(src, "-I", inc)
    assert bekc.build(src, "-I", inc).hit
    _user_copy_of_brainevent(tmp_path / "inc2")
    shutil.copytree(tmp_path / "inc2" / "brainevent", inc / "brainevent")
    again = bekc.build(src, "-I", inc)
    assert not again.hit and again.key != first.key
    deps = json.loads((again.manifest_path.parent / "dependencies.json").read_text())
    assert str(inc / "brainevent" / "common.h") in deps


# --------------------------------------------------------------------------- linker arguments
def test_linker_arg_reaches_the_linker_as_one_argument(bekc, tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text(CPU_KERNEL.replace("#ifndef USER_COPY_OF_BRAINEVENT", "#if 0"))
    odd = tmp_path / "lib dir,with comma"
    build = bekc.build(src, f"--linker-arg=-rpath={odd}")
    dyn = subprocess.run(["readelf", "-d", str(build.library)], capture_output=True, text=True)
    assert f"[{odd}]" in dyn.stdout, dyn.stdout


def test_a_linker_arg_nvcc_would_split_is_a_usage_error(bekc, nvcc, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(CPU_KERNEL.replace("#ifndef USER_COPY_OF_BRAINEVENT", "#if 0"))
    bad = bekc.build(src, "--linker-arg=-rpath=/a,/b", "--arch", ARCH, ok=False)
    assert bad.rc == 2 and "'-rpath=/a,/b' has a comma" in bad.stderr
    spaced = bekc.build(src, "--linker-arg=-rpath=/a b", "--arch", ARCH, ok=False)
    assert spaced.rc == 2 and "'-rpath=/a b' has white space" in spaced.stderr
    assert bekc.entries() == []
    empty = bekc.build(src, "--arch", ARCH, "--linker-arg", "", ok=False)
    assert empty.rc == 2 and "--linker-arg needs a non-empty value" in empty.stderr
