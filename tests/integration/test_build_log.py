"""$BEKC_LOG / log_file, the "why" of a miss, and `bekc cache stats` counters
(docs/cli.md, "Build log and statistics")."""

from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

FAST = "-O0"


@pytest.fixture
def env(tmp_path):
    """No user configuration, and a log file."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("BEKC_")}
    e["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    e["BEKC_LOG"] = str(tmp_path / "build.jsonl")
    return e


def log_lines(path: Path) -> list:
    return [json.loads(l) for l in path.read_text().splitlines()]


def counters(bekc, env) -> dict:
    proc = bekc.cache("stats", env=env)
    assert proc.returncode == 0, proc.stderr
    out = {}
    for name in ("hits", "local", "remote", "misses", "errors"):
        m = re.search(rf"^\s*{name}\s+(\d+)", proc.stdout, re.M)
        assert m, proc.stdout
        out[name] = int(m.group(1))
    return out


def test_one_line_per_build_with_result_and_why(bekc, kernels, env, tmp_path):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    first = bekc.build(src, FAST, env=env)
    second = bekc.build(src, FAST, env=env)
    assert second.hit
    kernels.cpp(src, value="2.0f")
    third = bekc.build(src, FAST, env=env)
    fourth = bekc.build(src, "-O1", env=env)
    lines = log_lines(tmp_path / "build.jsonl")
    assert [l["result"] for l in lines] == ["miss", "hit", "miss", "miss"]
    for l in lines:
        assert l["module"] == "k" and l["inputs"] == [str(src)] and l["exit_code"] == 0
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", l["time"])
        assert l["seconds_total"] >= l["seconds_compile"] >= 0
        assert len(l["direct_key"]) == 64
    assert lines[0]["why"]["previous_build"] is False
    assert lines[1]["why"] is None
    changed = {c["part"]: c for c in lines[2]["why"]["changed"]}
    assert list(changed) == ["input.sha256"], lines[2]["why"]
    assert changed["input.sha256"]["old"] != changed["input.sha256"]["new"]
    assert any(c["old"] == "-O0" and c["new"] == "-O1" and c["part"].startswith("step.argv[")
               for c in lines[3]["why"]["changed"]), lines[3]["why"]
    # --json carries the same "why".
    assert first.info["why"]["previous_build"] is False
    assert second.info["why"] is None
    assert third.info["why"] == lines[2]["why"]


def test_log_file_from_bekc_conf_and_a_failed_build(bekc, kernels, env, tmp_path):
    log = tmp_path / "logs" / "ci.jsonl"
    log.parent.mkdir()
    conf = tmp_path / "config" / "bekc" / "bekc.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("log_file = ../../logs/ci.jsonl\n")
    del env["BEKC_LOG"]
    src = kernels.cpp(bekc.workdir / "k.cpp", extra="this is not C++;")
    bad = bekc.build(src, FAST, env=env, ok=False)
    assert bad.rc == 1
    [line] = log_lines(log)
    assert line["result"] == "error" and line["exit_code"] == 1 and line["module"] == "k"
    assert counters(bekc, env)["errors"] == 1


def test_an_unwritable_log_warns_and_the_build_stands(bekc, kernels, env, tmp_path):
    env["BEKC_LOG"] = str(tmp_path / "no-such-dir" / "x.jsonl")
    build = bekc.build(kernels.cpp(bekc.workdir / "k.cpp"), FAST, env=env)
    assert "bekc: warning: build log: " in build.stderr
    os.mkfifo(tmp_path / "fifo")  # nobody reads it: an error, never a hang
    env["BEKC_LOG"] = str(tmp_path / "fifo")
    build = bekc.build(kernels.cpp(bekc.workdir / "k.cpp"), FAST, env=env, timeout=60)
    assert build.hit and "bekc: warning: build log: " in build.stderr


@pytest.mark.parametrize("where", ["in the cache", "a directory in the cache", "elsewhere"])
def test_the_log_is_not_written_through_a_symbolic_link(bekc, kernels, env, tmp_path, where):
    """The log was opened through links, unlike every other file under the
    cache root: a member of a shared cache who replaced the shared log (or
    its directory) with a link made everyone's builds append to a file of
    the member's choosing, such as ~/.bashrc."""
    victim = tmp_path / "bashrc"
    victim.write_text("# mine\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = {"in the cache": bekc.cache_dir / "build.jsonl",
           "a directory in the cache": bekc.cache_dir / "logs" / "build.jsonl",
           "elsewhere": tmp_path / "shared" / "build.jsonl"}[where]
    if where == "elsewhere":
        log.parent.mkdir()
    env["BEKC_LOG"] = str(log)
    src = kernels.cpp(bekc.workdir / "k.cpp")
    bekc.build(src, FAST, env=env)
    assert [l["result"] for l in log_lines(log)] == ["miss"]
    if where == "a directory in the cache":
        for f in log.parent.iterdir():
            f.unlink()
        log.parent.rmdir()
        log.parent.symlink_to(elsewhere)
        (elsewhere / "build.jsonl").symlink_to(victim)  # even a second link behind it
        planted = elsewhere
    else:
        log.unlink()
        log.symlink_to(victim)
        planted = log
    b = bekc.build(src, FAST, env=env)
    assert b.hit and "bekc: warning: build log: " in b.stderr, b.describe()
    assert "symbolic link" in b.stderr, b.describe()
    assert victim.read_text() == "# mine\n", f"the build appended through {planted}"


def test_stats_count_hits_and_misses_and_zero(bekc, kernels, env):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    bekc.build(src, FAST, env=env)
    bekc.build(src, FAST, env=env)
    bekc.build(src, FAST, env=env)
    c = counters(bekc, env)
    assert (c["hits"], c["local"], c["remote"], c["misses"], c["errors"]) == (2, 2, 0, 1, 0)
    proc = bekc.cache("stats", env=env)
    assert "(66.67 %)" in proc.stdout and re.search(r"^cache size\s+.* / .*", proc.stdout, re.M)
    zero = bekc.cache("stats", "--zero", env=env)
    assert zero.returncode == 0, zero.stderr
    c = counters(bekc, env)
    assert c["hits"] == c["misses"] == 0
    assert "stats zeroed" in bekc.cache("stats", env=env).stdout
    # clear keeps the counters, as ccache -C does; verify accepts them.
    bekc.build(src, FAST, env=env)
    assert bekc.cache("clear", env=env).returncode == 0
    assert counters(bekc, env)["hits"] == 1
    assert bekc.cache("verify", env=env).returncode == 0


def test_concurrent_builds_neither_lose_counts_nor_corrupt_them(bekc, kernels, env):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    bekc.build(src, FAST, env=env)
    with ThreadPoolExecutor(8) as pool:
        builds = list(pool.map(lambda _: bekc.build(src, FAST, env=env), range(16)))
    assert all(b.hit for b in builds)
    c = counters(bekc, env)
    assert (c["local"], c["misses"]) == (16, 1)
    # One byte per build in each counter's tally, no lock taken on a hit.
    assert (bekc.cache_dir / "stats.local_hits.tally").read_bytes() == b"+" * 16
    assert len(log_lines(Path(env["BEKC_LOG"]))) == 17


def test_history_is_maintained_by_clear_verify_and_prune(bekc, kernels, env):
    src = kernels.cpp(bekc.workdir / "k.cpp")
    bekc.build(src, FAST, env=env)
    history = list((bekc.cache_dir / "history").glob("*/*.json"))
    assert len(history) == 1
    history[0].write_text("not json")
    proc = bekc.cache("verify", env=env)
    assert proc.returncode == 4 and "not a build history record" in proc.stdout, proc.stdout
    assert not history[0].exists()
    bekc.build(src, "-O1", env=env)
    assert len(list((bekc.cache_dir / "history").glob("*/*.json"))) == 1
    assert bekc.cache("prune", "--max-size", "0", env=env).returncode == 0
    assert not list((bekc.cache_dir / "history").glob("*/*.json"))
    bekc.build(src, "-O1", env=env)
    assert bekc.cache("clear", env=env).returncode == 0
    assert not list((bekc.cache_dir / "history").glob("*/*.json"))
