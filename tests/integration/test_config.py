"""bekc.conf (docs/cli.md, "Configuration"): the files, their precedence,
errors as FILE:LINE, `bekc config --show`, and files that are not files."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    (path / ".config" / "bekc").mkdir(parents=True)
    return path


@pytest.fixture
def run(bekc_path, home, tmp_path):
    """Runs bekc with HOME in the test's directory and nothing else steering it."""
    def go(*args, timeout=60, **env_overrides):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("BEKC_") and k not in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
        env["HOME"] = str(home)
        env.update({k: str(v) for k, v in env_overrides.items()})
        return subprocess.run([str(bekc_path), *map(str, args)], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=timeout)
    return go


def user_conf(home: Path) -> Path:
    return home / ".config" / "bekc" / "bekc.conf"


def shown(proc) -> dict:
    """`config --show` lines as {key: (origin, value)}."""
    assert proc.returncode == 0, proc.stderr
    out = {}
    for line in proc.stdout.splitlines():
        m = re.fullmatch(r"\((.*)\) (\w+) = (.*)", line)
        if m:
            out[m.group(2)] = (m.group(1), m.group(3))
    return out


def test_show_names_every_setting_and_its_origin(run, home, tmp_path):
    user_conf(home).write_text("# mine\n\nmax_size = 3G\nlauncher = ccache\n")
    proc = run("config", "--show", "--remote-cache", "http://flag.example/",
               BEKC_LOG=tmp_path / "log.jsonl")
    s = shown(proc)
    assert set(s) == {"cache_dir", "max_size", "read_only_caches", "remote_cache",
                      "remote_read_only", "remote_wait", "s3_region", "s3_endpoint",
                      "s3_path_style", "base_dir", "launcher", "log_file",
                      "record"}, proc.stdout
    assert s["cache_dir"] == ("default", str(home / ".cache" / "bekc"))
    assert s["max_size"] == (f"{user_conf(home)}:3", "3G")
    assert s["launcher"] == (f"{user_conf(home)}:4", "ccache")
    assert s["log_file"] == ("$BEKC_LOG", str(tmp_path / "log.jsonl"))
    assert s["remote_cache"] == ("--remote-cache", "http://flag.example/")
    assert f"#   {home / '.cache' / 'bekc' / 'bekc.conf'} (not present)" in proc.stdout


def test_user_file_chooses_the_cache_and_relative_paths_follow_the_file(run, home):
    user_conf(home).write_text("cache_dir = ../../team-cache\n")
    proc = run("cache", "path")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(home / "team-cache")


def test_the_cache_file_wins_over_the_user_file_and_not_the_other_way(run, home):
    cache = home / ".cache" / "bekc"
    cache.mkdir(parents=True)
    user_conf(home).write_text("max_size = 3G\nlauncher = from-user\n")
    (cache / "bekc.conf").write_text("max_size = 4G\n")
    s = shown(run("config", "--show"))
    assert s["max_size"] == (f"{cache / 'bekc.conf'}:1", "4G")
    # A key the cache's file leaves alone still comes from the user's file.
    assert s["launcher"] == (f"{user_conf(home)}:2", "from-user")
    proc = run("cache", "max-size")
    assert proc.stdout.strip() == f"4.0 GB ({cache / 'bekc.conf'}:1)", proc.stdout


def test_environment_over_files_and_command_line_over_environment(run, home, tmp_path):
    user_conf(home).write_text(f"cache_dir = {tmp_path / 'file-cache'}\nmax_size = 3G\n")
    s = shown(run("config", "--show", BEKC_CACHE_MAX_SIZE="5G",
                  BEKC_CACHE_DIR=tmp_path / "env-cache"))
    assert s["max_size"] == ("$BEKC_CACHE_MAX_SIZE", "5G")
    assert s["cache_dir"] == ("$BEKC_CACHE_DIR", str(tmp_path / "env-cache"))
    s = shown(run("config", "--show", "--cache-dir", tmp_path / "flag-cache",
                  BEKC_CACHE_DIR=tmp_path / "env-cache"))
    assert s["cache_dir"] == ("--cache-dir", str(tmp_path / "flag-cache"))
    proc = run("cache", "path", BEKC_CACHE_DIR=tmp_path / "env-cache")
    assert proc.stdout.strip() == str(tmp_path / "env-cache")


def test_bekc_config_replaces_the_cache_file(run, home, tmp_path):
    cache = home / ".cache" / "bekc"
    cache.mkdir(parents=True)
    (cache / "bekc.conf").write_text("max_size = 4G\n")
    team = tmp_path / "team.conf"
    team.write_text("max_size = 6G\n")
    s = shown(run("config", "--show", BEKC_CONFIG=team))
    assert s["max_size"] == (f"{team}:1", "6G")
    missing = run("config", "--show", BEKC_CONFIG=tmp_path / "nope.conf")
    assert missing.returncode == 2 and "nope.conf" in missing.stderr


@pytest.mark.parametrize("line, message", [
    ("max_sise = 1G", "unknown key 'max_sise'"),
    ("max_size = lots", "max_size: "),
    ("remote_read_only = perhaps", "remote_read_only must be true or false"),
    ("remote_cache = ftp://x", "remote_cache must be an http://, https:// or s3:// URL"),
    ("s3_endpoint = s3://x", "s3_endpoint must be an http:// or https:// URL"),
    ("s3_region = eu west", "s3_region must be a plain word"),
    ("remote_wait = 5m", "remote_wait must be a number of seconds from 0 to 3600"),
    ("remote_wait = 9999", "remote_wait must be a number of seconds from 0 to 3600"),
])
def test_a_bad_line_is_file_line_error_and_exit_2_for_every_command(run, home, kernels, tmp_path,
                                                                   line, message):
    user_conf(home).write_text(f"# ok\ncache_dir = {tmp_path / 'c'}\n{line}\n")
    src = kernels.cpp(tmp_path / "k.cpp")
    prefix = f"{user_conf(home)}:3: error: {message}"
    for args in (["config", "--show"], ["cache", "stats"], ["build", src, "-O0"], ["doctor"]):
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stderr.startswith(prefix), (args, proc.stderr)
    assert not (tmp_path / "c").exists(), "a build ran despite the bad configuration"


@pytest.mark.parametrize("line, key", [
    ("max_sise = 1G", "max_size"),
    ("MAX-SIZE = 1G", "max_size"),
    ("BEKC_CACHE_MAX_SIZE = 1G", "max_size"),
    ("remote-cache = http://x", "remote_cache"),
])
def test_a_mistyped_key_gets_the_key_it_meant_at_its_file_and_line(run, home, line, key):
    user_conf(home).write_text(f"# mine\n{line}\n")
    proc = run("config")
    typo = line.split(" =")[0]
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"{user_conf(home)}:2: error: unknown key '{typo}'; "
                                  f"did you mean {key}? bekc.conf knows cache_dir, "), proc.stderr


def test_config_alone_shows_the_settings(run, home):
    user_conf(home).write_text("max_size = 3G\n")
    alone = run("config")
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout == run("config", "--show").stdout
    assert shown(alone)["max_size"] == (f"{user_conf(home)}:1", "3G")


def test_cache_dir_in_the_cache_file_is_an_error(run, tmp_path):
    cache = tmp_path / "c"
    cache.mkdir()
    (cache / "bekc.conf").write_text("cache_dir = /elsewhere\n")
    proc = run("cache", "path", "--cache-dir", cache)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"{cache / 'bekc.conf'}:1: error: cache_dir cannot be set")


def test_a_fifo_in_the_config_place_is_refused_without_hanging(run, home):
    os.mkfifo(user_conf(home))
    proc = run("config", "--show", timeout=20)
    assert proc.returncode == 2
    assert f"cannot read {user_conf(home)}" in proc.stderr, proc.stderr


def test_a_huge_config_file_is_refused(run, home):
    with open(user_conf(home), "wb") as f:
        f.truncate(64 << 20)  # sparse: 64 MiB of zeros
    proc = run("config", "--show", timeout=20)
    assert proc.returncode == 2
    assert "larger than" in proc.stderr, proc.stderr


def test_a_config_file_read_through_a_symlink_is_used(run, home, tmp_path):
    real = tmp_path / "real.conf"
    real.write_text("max_size = 8G\n")
    user_conf(home).symlink_to(real)
    assert shown(run("config", "--show"))["max_size"] == (f"{user_conf(home)}:1", "8G")
    real.unlink()  # a dangling link is no file
    assert run("config", "--show").returncode == 0


def test_the_launcher_from_the_file_reaches_every_compile(run, home, kernels, tmp_path):
    launcher = home / ".config" / "bekc" / "wrap.sh"
    launcher.write_text('#!/bin/sh\nexec "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    user_conf(home).write_text("launcher = wrap.sh\n")  # a name: looked up on PATH
    src = kernels.cpp(tmp_path / "k.cpp")
    missing = run("build", src, "-O0", "--dry-run")
    assert missing.returncode == 3 and "'wrap.sh'" in missing.stderr, missing.stderr
    user_conf(home).write_text("launcher = ./wrap.sh\n")  # a path: relative to the file
    dry = run("build", src, "-O0", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    compiles = [l for l in dry.stdout.splitlines() if " -c " in l and not l.startswith("#")]
    assert compiles and all(l.split()[0] == str(launcher) for l in compiles), dry.stdout
