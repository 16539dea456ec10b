"""bekc's Python package and the binary agree on every rule they share: the
exit codes, the loaders' keywords and the `bekc build` option each becomes,
and the words of the --arch refusals (python/bekc/_interface.py, generated
from the binary's `bekc config --json`), and the cache directory (asked of
the binary whenever it is needed). Each test compares the package's view with
the binary's for every row, not a sample."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

import bekc
from bekc import _compat, _errors, _interface, _run
from bekc._argv import build_argv
from bekc._for_brainevent import building_for_brainevent
from bekc._options import LoaderOptions
from conftest import REPO


@pytest.fixture
def binary_says(bekc_bin, tmp_path):
    """`bekc config --json`, in a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BEKC_", "XDG_"))}
    env["HOME"] = str(tmp_path / "home")
    r = subprocess.run([bekc_bin, "config", "--json"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_generated_tables_are_the_binarys(bekc_bin):
    r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "generate_python_interface.py"),
                        "--bekc", bekc_bin, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_exit_code_is_explained_as_the_binary_says(binary_says, tmp_path):
    """A command that exits with one of the binary's codes raises CacheError
    for the cache's code and CompileError for each other, with the binary's
    words for it; no code is left out."""
    rows = binary_says["exit_codes"]
    assert {r["kind"] for r in rows} == set(_interface.EXIT_CODES)
    for row in rows:
        script = tmp_path / f"exit{row['code']}"
        script.write_text(f"#!/bin/sh\necho 'bekc: error: it failed' >&2\nexit {row['code']}\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        want = bekc.CacheError if row["kind"] == "cache" else bekc.CompileError
        with pytest.raises(want) as e:
            _run.run_bekc([str(script), "build"])
        assert type(e.value) is want
        assert f"(exit {row['code']}: {row['meaning']})" in str(e.value)
        assert _errors.exit_code(row["kind"]) == row["code"]


def test_the_loader_options_are_the_binarys_keywords(binary_says):
    """LoaderOptions has one field per keyword of the binary's table, and
    each loader's kind takes the keywords the table gives it."""
    rows = binary_says["loader_keywords"]
    assert set(LoaderOptions.keywords()) == {r["keyword"] for r in rows}
    for kind in ("cuda", "cxx"):
        assert set(LoaderOptions.taken_by(kind)) == {
            r["keyword"] for r in rows if r["kind"] in ("", kind)}


# A value other than the default for every keyword (a keyword the binary adds
# needs one here), and the loaders that take it.
SAMPLES = {
    "name": "m", "functions": {"f": ["arg", "ret"]}, "target_prefix": "tp",
    "optimization_level": 1, "use_fast_math": True, "compute_capability": "8.6",
    "extra_include_paths": ["/inc"], "extra_cuda_cflags": ["-lineinfo"],
    "extra_cflags": ["-DX=1"], "extra_ldflags": ["-lm"], "allow_cuda_graph": False,
    "force_rebuild": True, "build_directory": "/out", "ninja_workers": 2, "verbose": True,
    "replace": True, "auto_register": False,
}


def _split(arg: str):
    """(the option, whether a value is joined to it) of one written argument."""
    if arg.startswith("--"):
        return arg.split("=", 1)[0], "=" in arg
    return arg[:2], len(arg) > 2


@pytest.mark.parametrize("kind", ["cuda", "cxx"])
def test_every_argument_a_load_writes_is_an_option_of_the_binary(binary_says, bekc_bin, kind,
                                                                  monkeypatch):
    """With every keyword set, and what a load adds (brainevent's headers and
    nvcc, XLA's headers, the cache, the Python sites): each argument is an
    option `bekc build` has, with a value exactly when the option takes one,
    and one that may be given once is given once."""
    assert set(SAMPLES) == set(LoaderOptions.keywords())
    table = {name: row for row in binary_says["build_options"] for name in row["names"]}
    options = LoaderOptions(kind=kind, **{k: v for k, v in SAMPLES.items()
                                          if k in LoaderOptions.taken_by(kind)})
    argv = build_argv(["/k.cu"], options, binary=bekc_bin, cache_dir="/c",
                      brainevent_include="/b", xla_include="/x")
    monkeypatch.setattr(_compat, "nvcc_settings", lambda: ("/nvcc", "pip"))
    with building_for_brainevent():
        argv += _compat._nvcc_args() if kind == "cuda" else _compat._site_args(cuda=False)
    written = [_split(a) for a in argv[3:]]
    for keyword, of_kind, option, form in _interface.LOADER_KEYWORDS:
        if of_kind in ("", kind) and form != "none":
            assert option in [o for o, _ in written], (keyword, argv)
    for option, has_value in written:
        assert option in table, (option, argv)
        assert table[option]["value"] == has_value, (option, argv)
        if not table[option]["repeatable"]:
            assert [o for o, _ in written].count(option) == 1, (option, argv)


@pytest.mark.parametrize("setting", ["default", "xdg", "relative xdg", "env", "relative env",
                                     "tilde env", "user conf", "flag"])
def test_the_cache_dir_is_the_one_the_binary_uses(bekc_bin, monkeypatch, tmp_path, setting):
    """However the cache is chosen, bekc.get_cache_dir() is the directory
    `bekc cache path` prints."""
    home = tmp_path / "home"
    (home / ".config" / "bekc").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    for var in ("BEKC_CACHE_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "BEKC_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", None)
    flag = []
    if setting == "xdg":
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    elif setting == "relative xdg":
        monkeypatch.setenv("XDG_CACHE_HOME", "xdg")
    elif setting == "env":
        monkeypatch.setenv("BEKC_CACHE_DIR", str(tmp_path / "env"))
    elif setting == "relative env":
        monkeypatch.setenv("BEKC_CACHE_DIR", "env")
    elif setting == "tilde env":
        monkeypatch.setenv("BEKC_CACHE_DIR", "~/env")
    elif setting == "user conf":
        (home / ".config" / "bekc" / "bekc.conf").write_text(f"cache_dir = {tmp_path / 'c'}\n")
    elif setting == "flag":
        bekc.set_cache_dir(tmp_path / "flag")  # monkeypatch gives back the value before
        flag = [f"--cache-dir={_compat._CACHE_DIR_OVERRIDE}"]
    printed = subprocess.run([bekc_bin, "cache", "path"] + flag, capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr
    assert bekc.get_cache_dir() == printed.stdout.strip()


@pytest.mark.parametrize("answer", ['{"own": "/c"}', '{"dir": 3, "own": "/c"}', "[1]",
                                    "not json"])
def test_a_malformed_cache_answer_from_the_lookup_library_is_a_bekc_error(
        bekc_bin, monkeypatch, answer):
    """The cache choice comes from the lookup library in this process when it
    is loaded; an answer without the directories it must name is a BekcError
    that says whose answer it was, as the binary's own is, not a KeyError."""
    from bekc import _cache_choice, _lookup
    monkeypatch.setattr(_lookup, "cache_choice", lambda binary, flag: answer)
    monkeypatch.setattr(_cache_choice, "_MEMO", {})
    with pytest.raises(_errors.BekcError, match="cache"):
        _cache_choice.cache_choice(bekc_bin, "/some/cache")
