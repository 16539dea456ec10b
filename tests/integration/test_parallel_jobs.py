"""How many compilers bekc runs at once: `-j N` counts every
process and every nvcc thread, `-j 1` never runs two, and under `make -jN`
the compilers of all recipes together stay within make's N (its jobserver).

The compilers here are fakes that sleep, write the outputs they are asked
for, and log when they ran and with how many threads, so the overlap is
measured from the processes themselves, not from bekc's own account.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FAKE = r'''#!PYTHON
import json, os, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print("fake compiler 1.0")
    sys.exit(0)
if args == ["-print-multiarch"]:
    print("x86_64-linux-gnu")
    sys.exit(0)
if "--dryrun" in args:
    sys.exit(0)  # no phases listed: each CUDA compile stays one nvcc process
def after(flag):
    return args[args.index(flag) + 1] if flag in args else None
threads = int(after("--threads") or 1)
start = time.monotonic()
time.sleep(float(os.environ.get("FAKE_SECONDS", "0.4")))
out, depfile = after("-o"), after("-MF")
if out:
    Path = __import__("pathlib").Path
    Path(out).write_text("fake output\n")
if depfile:
    open(depfile, "w").write(f"{out}: \n")
for a in args:
    if a.startswith("--dependency-file="):
        open(a.split("=", 1)[1], "w").write(f"{out}:\n")
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps([start, time.monotonic(), threads]) + "\n")
'''

KERNEL = """#include "brainevent/common.h"
// @BE {name}
void {name}(const BE::Tensor x, BE::Tensor y) {{}}
"""


@pytest.fixture
def tools(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("g++", "nvcc"):
        p = bin_dir / name
        p.write_text(FAKE.replace("PYTHON", sys.executable, 1))
        p.chmod(0o755)
    return bin_dir


def sources(tmp_path, n, suffix=".cpp"):
    out = []
    for i in range(n):
        p = tmp_path / f"k{i}{suffix}"
        p.write_text(KERNEL.format(name=f"k{i}"))
        out.append(p)
    return out


def most_at_once(log: Path) -> int:
    """The most threads running at any moment, from the fakes' own log."""
    events = []
    for line in log.read_text().splitlines():
        start, end, threads = json.loads(line)
        events += [(start, threads), (end, -threads)]
    busy = most = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts at a tie
        busy += delta
        most = max(most, busy)
    return most


def build(bekc_path, tools, tmp_path, inputs, *args, log_name="log"):
    log = tmp_path / log_name
    env = dict(os.environ, FAKE_LOG=str(log))
    proc = subprocess.run(
        [str(bekc_path), "build", *map(str, inputs), "--name", "m", "--force",
         "--cxx", str(tools / "g++"), "--nvcc", str(tools / "nvcc"),
         "--cache-dir", str(tmp_path / "cache"), *args],
        capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return log


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_j_bounds_the_compilers_at_once(bekc_path, tools, tmp_path, jobs):
    inputs = sources(tmp_path, 4)
    build(bekc_path, tools, tmp_path, inputs, log_name="warm")  # bekc_rt.o, once
    log = build(bekc_path, tools, tmp_path, inputs, "-j", str(jobs))
    most = most_at_once(log)
    assert most <= jobs
    assert most == jobs, f"-j {jobs} should run {jobs} of the 4 compiles at once"


def test_nvcc_threads_count_against_j(bekc_path, tools, tmp_path):
    inputs = sources(tmp_path, 2, ".cu")
    build(bekc_path, tools, tmp_path, inputs, "--arch", "80,90,100", log_name="warm")
    log = build(bekc_path, tools, tmp_path, inputs, "--arch", "80,90,100", "-j", "5")
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [t for _, _, t in runs].count(2) == 2  # each input: 5 slots // 2 compiles
    assert most_at_once(log) <= 5
    one = build(bekc_path, tools, tmp_path, inputs[:1], "--arch", "80,90,100", "-j", "16",
                log_name="one")
    # nvcc with four threads; the entry points' compile and the link, one each.
    assert sorted(json.loads(line)[2] for line in one.read_text().splitlines()) == [1, 1, 4]


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_make_jobserver_bounds_every_recipe_together(bekc_path, tools, tmp_path):
    """`make -j2` with three recipes, each a bekc build of three inputs at
    -j 8: without the jobserver that is up to 9 compilers at once."""
    log = tmp_path / "log"
    rules = []
    for r in range(3):
        (tmp_path / f"r{r}").mkdir()
        inputs = " ".join(str(p) for p in sources(tmp_path / f"r{r}", 3))
        rules.append(
            f"r{r}:\n\t+{bekc_path} build {inputs} --name m{r} --force -j 8 -q "
            f"--cxx {tools}/g++ --cache-dir {tmp_path}/cache{r}\n")
    (tmp_path / "Makefile").write_text(".PHONY: all r0 r1 r2\nall: r0 r1 r2\n" + "".join(rules))
    env = dict(os.environ, FAKE_LOG=str(log))
    for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(var, None)
    proc = subprocess.run(["make", "-j2", "-C", str(tmp_path)], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert most_at_once(log) <= 2


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_a_recipe_takes_the_tokens_others_give_back(bekc_path, tools, tmp_path):
    """`make -j4`: two short recipes and a long one start together, and one
    token is free. Once the short ones end, their tokens are free again: the
    long recipe, which could have counted its tokens only at its start, runs
    three of its compiles at once from then on."""
    rules = []
    for r, count in enumerate((1, 1, 8)):
        (tmp_path / f"r{r}").mkdir()
        inputs = " ".join(str(p) for p in sources(tmp_path / f"r{r}", count))
        rules.append(
            f"r{r}:\n\t+FAKE_LOG={tmp_path}/log{r} {bekc_path} build {inputs} --name m{r} "
            f"--force -j 8 -q --cxx {tools}/g++ --cache-dir {tmp_path}/cache\n")
    (tmp_path / "Makefile").write_text(".PHONY: all r0 r1 r2\nall: r0 r1 r2\n" + "".join(rules))
    build(bekc_path, tools, tmp_path, sources(tmp_path, 1), log_name="warm")  # bekc_rt.o
    env = dict(os.environ)
    for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(var, None)
    proc = subprocess.run(["make", "-j4", "-C", str(tmp_path)], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    combined = tmp_path / "all"
    combined.write_text("".join((tmp_path / f"log{r}").read_text() for r in range(3)))
    assert most_at_once(combined) <= 4
    assert most_at_once(tmp_path / "log2") >= 3  # more than the token free at its start


def make_package(tmp_path, files):
    """A package directory of `files` CUDA kernel files (package/package_plan)."""
    pkg = tmp_path / "pkg"
    (pkg / "include" / "brainevent").mkdir(parents=True)
    (pkg / "include" / "brainevent" / "common.h").write_text("#pragma once\n")
    (pkg / "ops").mkdir()
    sources(pkg / "ops", files, ".cu")
    return pkg


def build_package(bekc_path, tools, tmp_path, pkg, jobs, **env_vars):
    """`bekc build <pkg> -j jobs --force` with the fakes; their log."""
    build(bekc_path, tools, tmp_path, sources(tmp_path, 1, ".cu"), log_name="warm")  # bekc_rt.o
    log = tmp_path / "log"
    env = dict(os.environ, FAKE_LOG=str(log), FAKE_SECONDS="1.0")
    for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(var, None)
    env.update(env_vars)
    proc = subprocess.run(
        [str(bekc_path), "build", str(pkg), "-j", str(jobs), "--force", "--cxx",
         str(tools / "g++"), "--nvcc", str(tools / "nvcc"), "--cache-dir",
         str(tmp_path / "cache")],
        capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "modules built" in proc.stderr
    return log


def test_a_package_in_a_recipe_make_did_not_hand_its_jobserver_runs_one_compile_at_a_time(
        bekc_path, tools, tmp_path):
    """A recipe without `+` gets make's MAKEFLAGS but not its descriptors:
    make counts it as one slot, so the package may not serve its own -j."""
    pkg = make_package(tmp_path, 2)
    log = build_package(bekc_path, tools, tmp_path, pkg, 4,
                        MAKEFLAGS="-j8 --jobserver-auth=900,901")
    assert most_at_once(log) == 1


def test_a_packages_modules_share_its_slots(bekc_path, tools, tmp_path):
    """`bekc build <package> -j 4` of three CUDA files, each two compiles side
    by side (nvcc and the entry points' compile): a slot each leaves the
    fourth to whichever module can use it, never more than four at once."""
    log = build_package(bekc_path, tools, tmp_path, make_package(tmp_path, 3), 4)
    assert most_at_once(log) == 4


def test_a_quarter_of_a_packages_slots_is_left_to_its_modules_own_parallel_compiles(
        bekc_path, tools, tmp_path):
    """`bekc build <package> -j 4` of four modules: three modules run at
    once, each in a slot of its own, and the fourth slot is a token that
    whichever module has a second compile ready (here each has two: nvcc and
    the entry points) takes; the compilers together never pass -j."""
    pkg = make_package(tmp_path, 4)
    trace = tmp_path / "trace.json"
    build(bekc_path, tools, tmp_path, sources(tmp_path, 1, ".cu"), log_name="warm")  # bekc_rt.o
    log = tmp_path / "log"
    env = dict(os.environ, FAKE_LOG=str(log), FAKE_SECONDS="1.0")
    for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(var, None)
    proc = subprocess.run(
        [str(bekc_path), "build", str(pkg), "-j", "4", "--force", "--cxx", str(tools / "g++"),
         "--nvcc", str(tools / "nvcc"), "--cache-dir", str(tmp_path / "cache"),
         "--trace", str(trace)],
        capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert most_at_once(log) == 4
    modules = [e for e in json.loads(trace.read_text())["traceEvents"]
               if e.get("ph") == "X" and e.get("cat") == "module"]
    assert len(modules) == 4
    events = sorted([(e["ts"], 1) for e in modules] + [(e["ts"] + e["dur"], -1) for e in modules],
                    key=lambda e: (e[0], e[1]))
    running = most = 0
    for _, delta in events:
        running += delta
        most = max(most, running)
    assert most == 3


def test_a_packages_first_build_starts_its_biggest_files_first(bekc_path, tools, tmp_path):
    """With no times from an earlier build, the modules start biggest source
    first: the longest compile is then less likely to start last and hold
    the whole package up (brainevent 0.3.0: docs/benchmarks.md)."""
    pkg = make_package(tmp_path, 3)
    sizes = {"k0": 100, "k1": 5000, "k2": 900}
    for name, padding in sizes.items():
        f = pkg / "ops" / f"{name}.cu"
        f.write_text(f.read_text() + "//" + "x" * padding + "\n")
    proc = subprocess.run(
        [str(bekc_path), "build", str(pkg), "-j", "1", "--dry-run", "--cxx",
         str(tools / "g++"), "--nvcc", str(tools / "nvcc"), "--cache-dir",
         str(tmp_path / "cache")],
        capture_output=True, text=True, env=dict(os.environ, FAKE_LOG=str(tmp_path / "log")))
    assert proc.returncode == 0, proc.stderr
    started = [next(n for n in sizes if f"{n}.cu" in line) for line in proc.stdout.splitlines()]
    assert started == ["k1", "k2", "k0"]


def test_stdin_and_stdout_named_as_a_jobserver_are_left_alone(bekc_path, tools, tmp_path):
    """MAKEFLAGS that name descriptors 0 and 1, two different pipes here, name
    no jobserver: bekc reads nothing from its standard input, writes nothing
    but its --json line to its standard output, and -v says why."""
    inputs = sources(tmp_path, 3)
    build(bekc_path, tools, tmp_path, inputs, log_name="warm")  # bekc_rt.o, once
    read_end, write_end = os.pipe()
    os.write(write_end, b"++++")
    env = dict(os.environ, FAKE_LOG=str(tmp_path / "log"), MAKEFLAGS="-j8 --jobserver-auth=0,1")
    proc = subprocess.run(
        [str(bekc_path), "build", *map(str, inputs), "--name", "m", "--force", "-j", "4",
         "--cxx", str(tools / "g++"), "--cache-dir", str(tmp_path / "cache"), "--json", "-v"],
        stdin=read_end, capture_output=True, text=True, env=env)
    os.close(write_end)
    left = os.read(read_end, 64)
    os.close(read_end)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["manifest"], proc.stdout
    assert left == b"++++"
    assert "make's jobserver is not used" in proc.stderr
    assert "not the two ends of one pipe" in proc.stderr
