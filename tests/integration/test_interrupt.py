"""An interrupted or killed bekc leaves nothing running and nothing behind.

* Ctrl-C under `make -j4` (SIGINT to the whole foreground group): bekc stops
  its compilers, removes its build directory, returns make's jobserver tokens
  and dies of SIGINT.
* SIGTERM to bekc alone (Python's subprocess on an exception): the same.
* SIGKILL to bekc alone: its compilers get a parent-death signal, and a
  compiler that outlives it anyway cannot write into the next build, which
  compiles in a directory of its own.

The compiler is g++ behind a shell wrapper (--cxx) whose compile of the
user's file can be made to wait on files the test creates.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import stat
import subprocess
import time
from pathlib import Path

import pytest

KERNEL = """\
#include "brainevent/common.h"
#include "val.h"
// @BE add_one
void add_one(const BE::Tensor x, BE::Tensor out) {
    for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = x.data_ptr<float>()[i] + 1;
}
extern "C" __attribute__((visibility("default"))) int bekc_probe() { return VAL; }
"""

# $SLOW_READY: touched once the user's file is compiled (and a copy of the
# object kept in $SLOW_READY.o); the compile then ends only when $SLOW_GO
# exists, with $SLOW_COPY first writing the kept object to its -o path (a
# compiler that writes late), and $SLOW_DONE says it got there. Without
# $SLOW_READY, plain g++.
WRAPPER = """#!/bin/sh
echo $$ >> "{pids}"
echo $PPID >> "{parents}"
out=""; prev=""; ours=no; compile=no
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  case "$a" in -c) compile=yes;; *bekc_handlers.cpp|*handler_rt.cpp) ours=yes;; esac
  prev="$a"
done
if [ -z "$SLOW_READY" ] || [ $compile = no ] || [ $ours = yes ]; then exec g++ "$@"; fi
g++ "$@" || exit 1
dirname "$out" >> "{dirs}"
cp "$out" "$SLOW_READY.o"
touch "$SLOW_READY"
while [ ! -e "$SLOW_GO" ]; do sleep 0.05; done
[ -n "$SLOW_COPY" ] && cp "$SLOW_READY.o" "$out"
touch "$SLOW_DONE"
"""


def wait_for(path: Path, timeout: float = 60) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists():
            return True
        time.sleep(0.02)
    return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie no one reaped yet is as good as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def setup(tmp_path):
    d = tmp_path
    (d / "val.h").write_text("#define VAL 1\n")
    (d / "k.cpp").write_text(KERNEL)
    wrapper = d / "bin" / "cxx"
    wrapper.parent.mkdir()
    wrapper.write_text(WRAPPER.format(pids=d / "pids", parents=d / "parents", dirs=d / "dirs"))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return d, wrapper


def slow_env(d: Path, tag: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(SLOW_READY=str(d / f"ready.{tag}"), SLOW_GO=str(d / f"go.{tag}"),
               SLOW_DONE=str(d / f"done.{tag}"), TMPDIR=str(d / "tmp"))
    (d / "tmp").mkdir(exist_ok=True)
    return env


def build_dirs(d: Path) -> list:
    """The build directories the slow compiles wrote into."""
    path = d / "dirs"
    return [Path(x) for x in path.read_text().split()] if path.exists() else []


def wrapper_pids(d: Path) -> list:
    path = d / "pids"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


@pytest.mark.parametrize("how", ["Ctrl-C", "SIGTERM to bekc"])
def test_an_interrupt_under_make_stops_the_compilers_and_returns_the_tokens(bekc_path, setup,
                                                                             how):
    d, cxx = setup
    env = slow_env(d, "make")
    (d / "Makefile").write_text(
        f"all:\n\t+{bekc_path} build {d / 'k.cpp'} -O0 -j 4 -q --cxx {cxx} "
        f"--cache-dir {d / 'cache'}\n")
    make = subprocess.Popen(["make", "-j4", "-C", str(d)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    try:
        assert wait_for(d / "ready.make"), "the compile never started"
        if how == "Ctrl-C":
            os.killpg(make.pid, signal.SIGINT)  # the whole foreground group
        else:
            os.kill(int((d / "parents").read_text().split()[-1]), signal.SIGTERM)
        out, _ = make.communicate(timeout=60)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
    assert "jobserver tokens available" not in out, out
    assert make.returncode != 0
    time.sleep(0.3)
    assert not [p for p in wrapper_pids(d) if alive(p)], "a compiler outlived the interrupt"
    assert not (d / "done.make").exists()
    assert build_dirs(d) and not any(p.exists() for p in build_dirs(d)), "build directory left"


def test_sigterm_to_bekc_alone_stops_its_compilers_and_cleans_up(bekc_path, setup):
    d, cxx = setup
    env = slow_env(d, "term")
    proc = subprocess.Popen([str(bekc_path), "build", str(d / "k.cpp"), "-O0", "-q", "--cxx",
                             str(cxx), "--cache-dir", str(d / "cache")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert wait_for(d / "ready.term"), "the compile never started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, err
    time.sleep(0.3)
    assert not [p for p in wrapper_pids(d) if alive(p)], "a compiler outlived bekc"
    assert build_dirs(d) and not any(p.exists() for p in build_dirs(d)), "build directory left"


def test_a_compiler_left_by_a_killed_bekc_cannot_poison_the_next_build(bekc, setup):
    """bekc SIGKILLed while its compiler holds an object for the old header;
    the header changes and the next build runs while that compiler writes its
    object out. The next build must be the new header's."""
    d, cxx = setup
    first_env = dict(slow_env(d, "one"), SLOW_COPY="1")
    proc = subprocess.Popen(bekc.build_argv(d / "k.cpp", "-O0", "--cxx", cxx), env=first_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert wait_for(d / "ready.one"), "the compile never started"
    proc.kill()
    proc.communicate()
    (d / "val.h").write_text("#define VAL 2\n")
    second_env = slow_env(d, "two")
    second = subprocess.Popen(bekc.build_argv(d / "k.cpp", "-O0", "--cxx", cxx),
                              env=second_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    assert wait_for(d / "ready.two"), "the second compile never started"
    # The first compiler, if it still lives, now writes its old object.
    (d / "go.one").touch()
    wait_for(d / "done.one", timeout=3)
    (d / "go.two").touch()
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    library = json.loads(out.strip().splitlines()[-1])["library"]
    value = subprocess.run([sys.executable, "-c",
                    "import ctypes,sys; print(ctypes.CDLL(sys.argv[1]).bekc_probe())", library],
                   capture_output=True, text=True, check=True).stdout.strip()
    assert value == "2", "the library holds the killed build's object for the old header"
    assert not (d / "done.one").exists(), "the killed bekc's compiler ran on"
