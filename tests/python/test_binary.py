"""Finding the bekc executable and running it."""

from __future__ import annotations

import os
import stat
import sys

import pytest

import bekc
from bekc import _binary, _run
from support.kernels import NOOP_EXPORT


def _exe(path, body="#!/bin/sh\necho '{}'\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("BEKC", raising=False)
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(_binary, "bundled_binary_path", lambda: str(tmp_path / "nope" / "bekc"))
    return tmp_path


def test_env_var_wins(clean_env, monkeypatch):
    on_path = _exe(clean_env / "pathdir" / "bekc")
    monkeypatch.setenv("PATH", os.path.dirname(on_path))
    explicit = _exe(clean_env / "explicit" / "bekc")
    monkeypatch.setenv("BEKC", explicit)
    assert bekc.find_binary() == explicit


def test_env_var_bare_name_uses_path(clean_env, monkeypatch):
    p = _exe(clean_env / "pathdir" / "bekc-dev")
    monkeypatch.setenv("PATH", os.path.dirname(p))
    monkeypatch.setenv("BEKC", "bekc-dev")
    assert bekc.find_binary() == p


def test_env_var_not_executable(clean_env, monkeypatch):
    f = clean_env / "notexe"
    f.write_text("x")
    monkeypatch.setenv("BEKC", str(f))
    with pytest.raises(bekc.BinaryNotFoundError) as e:
        bekc.find_binary()
    assert "$BEKC" in str(e.value) and str(f) in str(e.value)


def test_path_lookup(clean_env, monkeypatch):
    p = _exe(clean_env / "pathdir" / "bekc")
    monkeypatch.setenv("PATH", os.pathsep.join([str(clean_env / "emptybin"), os.path.dirname(p)]))
    assert bekc.find_binary() == p


def test_bundled_copy(clean_env, monkeypatch):
    p = _exe(clean_env / "pkg" / "bin" / "bekc")
    monkeypatch.setattr(_binary, "bundled_binary_path", lambda: p)
    assert bekc.find_binary() == p


def test_missing_everywhere(clean_env):
    with pytest.raises(bekc.BinaryNotFoundError) as e:
        bekc.find_binary()
    msg = str(e.value)
    assert "$BEKC" in msg and "PATH" in msg and str(clean_env / "nope" / "bekc") in msg
    assert "BEKC=" in msg  # says how to set it
    assert isinstance(e.value, FileNotFoundError)


def test_loader_reports_missing_binary(clean_env, monkeypatch):
    from bekc import _compat
    monkeypatch.setattr(_compat, "_CACHE_DIR_OVERRIDE", str(clean_env / "cache"))
    with pytest.raises(bekc.BinaryNotFoundError):
        bekc.load_cpp_inline("nobin", NOOP_EXPORT)


def test_run_nonzero_exit_is_compile_error(tmp_path):
    script = _exe(tmp_path / "fail", "#!/bin/sh\necho 'k.cu:3:5: error: expected ;' >&2\nexit 1\n")
    with pytest.raises(bekc.CompileError) as e:
        _run.run_bekc([script, "build", "k.cu"])
    assert e.value.returncode == 1
    assert "k.cu:3:5: error: expected ;" in str(e.value)
    assert "k.cu:3:5" in e.value.stderr
    assert "exit 1" in str(e.value) and script in str(e.value)
    assert str(e.value).startswith("bekc build failed")


def test_run_exit_codes_are_explained(tmp_path):
    script = _exe(tmp_path / "fail3", "#!/bin/sh\necho 'nvcc not found' >&2\nexit 3\n")
    with pytest.raises(bekc.CompileError, match="nvcc or the host compiler is missing or failed to run"):
        _run.run_bekc([script])
    with pytest.raises(bekc.CompileError, match="^bekc cache clear failed"):
        _run.run_bekc([script, "cache", "clear", "--cache-dir=/x"])


def test_run_parses_json_and_warns(tmp_path):
    script = _exe(tmp_path / "ok",
                  "#!/bin/sh\necho 'bekc: warning: no GPU, using sm_80' >&2\n"
                  "echo '{\"manifest\": \"/x/manifest.json\"}'\n")
    with pytest.warns(RuntimeWarning, match="no GPU") as caught:
        assert _run.run_bekc([script]) == {"manifest": "/x/manifest.json"}
    # Said once whose it is, as the binary said it.
    assert [str(w.message) for w in caught] == ["bekc: warning: no GPU, using sm_80"]


def test_a_compilers_warning_is_said_to_come_through_bekc(tmp_path):
    script = _exe(tmp_path / "ok",
                  "#!/bin/sh\necho 'k.cu(3): warning #177-D: variable was declared' >&2\n"
                  "echo '{\"manifest\": \"/x/manifest.json\"}'\n")
    with pytest.warns(RuntimeWarning) as caught:
        _run.run_bekc([script])
    assert [str(w.message) for w in caught] == [
        "bekc: k.cu(3): warning #177-D: variable was declared"]


def test_run_bad_json(tmp_path):
    script = _exe(tmp_path / "junk", "#!/bin/sh\necho hello\n")
    with pytest.raises(bekc.BekcError, match="no JSON"):
        _run.run_bekc([script])


def test_run_verbose_echoes_stderr(tmp_path, capfd):
    script = _exe(tmp_path / "v", "#!/bin/sh\necho 'compiling k.cu' >&2\necho '{\"a\": 1}'\n")
    assert _run.run_bekc([script], verbose=True) == {"a": 1}
    assert "compiling k.cu" in capfd.readouterr().err


def test_never_uses_a_shell(tmp_path):
    # an argument full of shell syntax arrives verbatim
    script = _exe(tmp_path / "echo",
                  f"#!{sys.executable}\nimport json, sys\nprint(json.dumps({{'argv': sys.argv[1:]}}))\n")
    weird = "$(touch pwned); `x` | > ; '\""
    assert _run.run_bekc([script, weird]) == {"argv": [weird]}
    assert not os.path.exists("pwned")


def _fake_wheel_install(tmp_path, lists_this_package=True):
    """A site-packages holding a copy of the package and a dist-info whose
    RECORD names it and ../bin/bekc, as pip lays out a wheel."""
    import shutil
    site = tmp_path / "lib" / "site-packages"
    shutil.copytree(os.path.dirname(bekc.__file__), site / "bekc",
                    ignore=shutil.ignore_patterns("__pycache__", "bin", "lib"))
    exe = _exe(tmp_path / "bin" / "bekc")
    info = site / "bekc-0.1.0.dist-info"
    info.mkdir()
    own = "bekc/_binary.py" if lists_this_package else "other/_binary.py"
    info.joinpath("RECORD").write_text(f"{own},sha256=x,1\n\"../../bin/bekc\",sha256=y,2\n"
                                       f"bekc-0.1.0.dist-info/RECORD,,\n")
    return site, exe


_FIND_FROM_SITE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import bekc
try:
    found = bekc.find_binary()
except bekc.BinaryNotFoundError:
    found = None
print(json.dumps({"found": found, "metadata": "importlib.metadata" in sys.modules,
                  "package": os.path.dirname(bekc.__file__)}))
"""


def _find_from_site(site):
    import json
    import subprocess
    env = {k: v for k, v in os.environ.items() if k not in ("BEKC", "PYTHONPATH")}
    env["PATH"] = "/nonexistent"
    out = subprocess.run([sys.executable, "-c", _FIND_FROM_SITE, str(site)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_wheels_binary_is_found_from_its_record_without_importlib_metadata(tmp_path):
    site, exe = _fake_wheel_install(tmp_path)
    got = _find_from_site(site)
    assert got["package"] == str(site / "bekc")
    assert got["found"] == os.path.realpath(exe)
    assert not got["metadata"], "finding the binary imported importlib.metadata"


def test_a_record_that_does_not_list_this_package_is_not_trusted(tmp_path):
    site, _ = _fake_wheel_install(tmp_path, lists_this_package=False)
    got = _find_from_site(site)
    assert got["package"] == str(site / "bekc") and got["found"] is None
