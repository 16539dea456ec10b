"""``bekc.use_for_brainevent()`` decides by the loaders' parameters, not by the version string.

Each case runs in a fresh interpreter (the venv's), with a brainevent first on
``PYTHONPATH``:

* the real releases bekc is tested with: 0.2.1 (the venv's) and 0.3.0
  (``tests/brainevent_releases.py``);
* fake packages written here, whose ``brainevent._op`` defines the eight
  checked functions with 0.2.1's own parameters (read from its source with
  ``ast``, so no copy of them lives in this file), then altered one way per
  case, under a tested or a newer version string.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tests"))
import brainevent_releases  # noqa: E402

CHECKED = ("load_cuda_inline", "load_cuda_file", "load_cuda_dir", "load_cpp_inline",
           "load_cpp_file", "clear_cache", "set_cache_dir", "get_cache_dir")
LOADERS = CHECKED[:5]

# Runs use_for_brainevent() and prints what happened as JSON.
PROBE = """
import json, sys, warnings
sys.path.insert(0, {python!r})
import bekc
{before}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        report = bekc.use_for_brainevent()
        out = {{"check": report.check, "version": report.version,
                "replaced": report.replaced, "references": report.references}}
    except Exception as e:
        out = {{"error": type(e).__name__, "message": str(e)}}
import brainevent._op as op
out["theirs"] = [n for n in {loaders!r}
                 if getattr(getattr(op, n, None), "__wrapped__", None) is not getattr(bekc, n)]
out["warnings"] = [(w.category.__name__, str(w.message)) for w in caught
                   if str(w.message).startswith("bekc.")]
print(json.dumps(out))
"""


def probe(site, before: str = "") -> dict:
    env = dict(os.environ, PYTHONPATH=os.fspath(site))
    code = PROBE.format(python=os.path.join(REPO, "python"), before=before, loaders=LOADERS)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def release_site(version: str):
    site = brainevent_releases.site_of(version)
    if site is None:
        pytest.skip(f"brainevent {version} is not installed (scripts/setup.sh installs it)")
    return site


# --------------------------------------------------------------------------- fakes
def _signatures_of_021() -> dict:
    """name -> ast.FunctionDef of brainevent 0.2.1's checked functions, annotations dropped."""
    package = brainevent_releases.RELEASES["0.2.1"]
    if package is None:
        pytest.skip("brainevent 0.2.1 is not installed")
    tree = ast.parse((package / "_op" / "kernix_pipeline.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in CHECKED:
            args = node.args
            for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if a is not None:
                    a.annotation = None
            node.body, node.decorator_list, node.returns = [ast.Pass()], [], None
            found[node.name] = node
    assert sorted(found) == sorted(CHECKED)
    return found


def _arg(name: str) -> ast.arg:
    return ast.arg(arg=name)


def add_keyword(fn, name, default=None):
    fn.args.kwonlyargs.append(_arg(name))
    fn.args.kw_defaults.append(ast.Constant(default))


def rename(fn, old, new):
    for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
        if a.arg == old:
            a.arg = new


def set_default(fn, name, value):
    i = [a.arg for a in fn.args.kwonlyargs].index(name)
    fn.args.kw_defaults[i] = ast.Constant(value)


def make_positional(fn, name):
    """brainevent's keyword-only ``name`` becomes its next positional parameter."""
    i = [a.arg for a in fn.args.kwonlyargs].index(name)
    fn.args.args.append(fn.args.kwonlyargs.pop(i))
    fn.args.defaults.append(fn.args.kw_defaults.pop(i))


def write_fake(root, version: str, alter=None):
    """A brainevent package under ``root`` (returned: its site directory)."""
    functions = _signatures_of_021()
    drop = set()
    if alter is not None:
        drop = alter(functions) or set()
    body = "\n\n".join(ast.unparse(fn) for n, fn in functions.items() if n not in drop)
    names = ", ".join(n for n in CHECKED if n not in drop)
    pkg = root / "brainevent"
    (pkg / "_op").mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"__version__ = {version!r}\nfrom ._op import {names}\n")
    (pkg / "_op" / "__init__.py").write_text(f"from .kernix_pipeline import {names}\n")
    (pkg / "_op" / "kernix_pipeline.py").write_text(body + "\n")
    # An operator module that imported a loader, as brainevent's do.
    (pkg / "_dense.py").write_text("from brainevent._op import load_cuda_file\n")
    return root


# --------------------------------------------------------------------------- real releases
@pytest.mark.parametrize("version", ["0.2.1", "0.3.0"])
def test_tested_releases_are_accepted_without_a_warning(version):
    out = probe(release_site(version))
    assert "error" not in out, out["message"]
    assert (out["version"], out["check"]) == (version, "tested")
    assert out["warnings"] == [] and out["theirs"] == []
    assert out["replaced"] >= 30
    # the operator modules' own copies are bekc's too
    assert any(not m.startswith("brainevent._op") and m != "brainevent"
               for m, _ in out["references"])


# --------------------------------------------------------------------------- fakes
def test_a_newer_release_with_the_same_loaders_is_accepted_with_one_warning(tmp_path):
    out = probe(write_fake(tmp_path, "0.4.0"))
    assert "error" not in out, out["message"]
    assert (out["version"], out["check"]) == ("0.4.0", "parameters")
    # five loaders in each of brainevent, brainevent._op, kernix_pipeline; one in _dense
    assert out["theirs"] == [] and out["replaced"] == 16
    assert out["warnings"] == [[
        "UntestedBrainEventWarning",
        "bekc.use_for_brainevent(): brainevent 0.4.0 is not a release bekc was tested with "
        "(0.2.1, 0.3.0), but its loaders take the same parameters as bekc's, so bekc builds "
        "its kernels; add it to bekc.SUPPORTED_BRAINEVENT_VERSIONS to silence this warning"]]


def test_widening_the_public_list_silences_the_warning(tmp_path):
    site = write_fake(tmp_path, "0.4.0")
    out = probe(site, 'bekc.SUPPORTED_BRAINEVENT_VERSIONS |= {"0.4.0"}')
    assert "error" not in out, out["message"]
    assert (out["check"], out["warnings"], out["theirs"]) == ("listed", [], [])


def test_the_list_must_be_a_set_of_strings(tmp_path):
    out = probe(write_fake(tmp_path, "0.4.0"), 'bekc.SUPPORTED_BRAINEVENT_VERSIONS = "0.4.0"')
    assert out["error"] == "TypeError"
    assert out["message"] == (
        "bekc.SUPPORTED_BRAINEVENT_VERSIONS must be a set of version strings, got '0.4.0'; "
        "widen it with bekc.SUPPORTED_BRAINEVENT_VERSIONS |= {'0.4.0'}")


def _drop_get_cache_dir(f):
    return {"get_cache_dir"}


# (alteration of brainevent 0.2.1's functions, the differences the error must name)
ALTERED = {
    "new keyword": (
        lambda f: add_keyword(f["load_cuda_inline"], "cache_mode"),
        ["load_cuda_inline(): parameter 'cache_mode' is brainevent's, not bekc's"]),
    "renamed positional": (
        lambda f: rename(f["load_cuda_file"], "filepath", "path"),
        ["load_cuda_file(): parameter 'path' is brainevent's, not bekc's",
         "load_cuda_file(): parameter 'filepath' is required by bekc's, and brainevent's has "
         "none of that name"]),
    "other default": (
        lambda f: set_default(f["load_cuda_inline"], "optimization_level", 2),
        ["load_cuda_inline(): parameter 'optimization_level' defaults to 2 in brainevent, "
         "defaults to 3 in bekc"]),
    "keyword made positional": (
        lambda f: make_positional(f["load_cuda_dir"], "name"),
        ["load_cuda_dir(): parameter 'name' is positional argument 3 in brainevent, "
         "keyword-only in bekc"]),
    "star args": (
        lambda f: setattr(f["load_cpp_file"].args, "vararg", _arg("sources")),
        ["load_cpp_file(): brainevent's takes *sources, bekc's does not"]),
    "cache function": (
        lambda f: add_keyword(f["set_cache_dir"], "create", True),
        ["set_cache_dir(): parameter 'create' is brainevent's, not bekc's"]),
    "clear_cache renamed": (
        lambda f: rename(f["clear_cache"], "name", "module"),
        ["clear_cache(): parameter 'module' is brainevent's, not bekc's"]),
    "missing function": (
        _drop_get_cache_dir, ["brainevent._op has no function get_cache_dir()"]),
}


@pytest.mark.parametrize("version", ["0.2.1", "0.4.0"])
@pytest.mark.parametrize("case", list(ALTERED))
def test_a_release_whose_loaders_differ_is_refused(tmp_path, case, version):
    """Refused whatever the version string says (0.2.1 is a tested one), naming
    each function and parameter; brainevent keeps its own functions."""
    alter, expected = ALTERED[case]
    site = write_fake(tmp_path, version, alter)
    out = probe(site)
    assert out.get("error") == "UnsupportedBrainEventVersionError", out
    where = os.path.join(str(site), "brainevent", "__init__.py")
    assert out["message"] == (
        f"bekc.use_for_brainevent(): brainevent {version} ({where}) has loaders whose "
        f"parameters differ from bekc's: {'; '.join(expected)}. bekc's loaders would not take "
        f"every call brainevent makes the same way, so nothing was changed. Install a tested "
        f"release (pip install brainevent==0.3.0; tested: 0.2.1, 0.3.0) or use bekc's loaders "
        f"directly (import bekc as brainevent).")
    assert out["theirs"] == list(LOADERS) and out["warnings"] == []


def test_listing_a_release_does_not_let_differing_loaders_in(tmp_path):
    site = write_fake(tmp_path, "0.4.0", ALTERED["new keyword"][0])
    out = probe(site, 'bekc.SUPPORTED_BRAINEVENT_VERSIONS |= {"0.4.0"}')
    assert out.get("error") == "UnsupportedBrainEventVersionError"
    assert "load_cuda_inline(): parameter 'cache_mode'" in out["message"]


def test_a_brainevent_without_its_op_package_is_refused(tmp_path):
    pkg = tmp_path / "brainevent"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("__version__ = '0.4.0'\n")
    code = textwrap.dedent(PROBE).replace("import brainevent._op as op",
                                          "import types; op = types.SimpleNamespace()")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", code.format(
        python=os.path.join(REPO, "python"), before="", loaders=LOADERS)],
        capture_output=True, text=True, env=env, timeout=300)
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["error"] == "UnsupportedBrainEventVersionError"
    assert out["message"].startswith(
        "bekc.use_for_brainevent(): brainevent 0.4.0 "
        f"({pkg / '__init__.py'}) has no importable brainevent._op (ModuleNotFoundError: ")
