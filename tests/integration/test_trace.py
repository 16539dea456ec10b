"""`bekc build --trace FILE`: where a build's time went, as a Chrome trace
event file (Perfetto, chrome://tracing) — docs/cli.md, "Tracing a build".

A build's trace holds one complete event per step it ran, in lanes that never
hold two overlapping steps, with the step cache's outcome; its phases; and the
build's own outcome (a hit, a miss, a failure). A failed build still writes
its trace. A package build (and a replay) writes one file with a process per
module, every module's times on the package's clock. A path that cannot be
written is exit 2 before anything builds. bench/trace_summary.py and
bench/trace_svg.py read such a file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from prebuild import jaxlib_package, make_site, prebuild, with_brainevent_headers
from support.kernels import SCALE_PLAIN_CU, add_value_cpp

REPO = Path(__file__).resolve().parents[2]
STEP_KINDS = {"write-wrapper", "runtime-headers", "runtime-object", "compile", "nvcc-phase",
              "check", "link"}
PHASES = ["prepare", "plan", "look-up", "execute", "publish", "deliver"]
FAST = "-O0"


def load(path: Path) -> dict:
    trace = json.loads(path.read_text())
    assert isinstance(trace["traceEvents"], list)
    for e in trace["traceEvents"]:
        assert e["ph"] in ("X", "M"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "X":
            assert isinstance(e["ts"], int) and isinstance(e["dur"], int) and e["dur"] >= 0, e
            assert e["name"] and e["cat"], e
    return trace


def complete(trace: dict, pid: int = None) -> list:
    return [e for e in trace["traceEvents"]
            if e["ph"] == "X" and (pid is None or e["pid"] == pid)]


def steps(trace: dict, pid: int = 1) -> list:
    """The events of the process's lanes (its steps, or a package's modules)."""
    return [e for e in complete(trace, pid) if e["tid"] > 0]


def phases(trace: dict, pid: int = 1) -> list:
    return [e["name"] for e in sorted(complete(trace, pid), key=lambda e: e["ts"])
            if e["tid"] == 0 and e["cat"] == "phase"]


def build_span(trace: dict, pid: int = 1) -> dict:
    (span,) = [e for e in complete(trace, pid) if e["tid"] == 0 and e["cat"] == "build"]
    return span


def process_names(trace: dict) -> dict:
    return {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}


def assert_lanes_disjoint(trace: dict) -> None:
    lanes = {}
    for e in complete(trace):
        if e["tid"] > 0:
            lanes.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for lane, spans in lanes.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end, f"lane {lane}: overlapping steps {spans}"


def test_a_build_traces_each_step_in_lanes_and_its_phases(bekc, kernels, tmp_path):
    """A miss: every step it ran, one complete event each (compiles of the two
    inputs and of the entry points, the link, the wrappers' writes), with its
    command and status, in at most -j lanes without overlap; the phases on
    the build's own thread; the build's outcome, a miss, and the module's
    name. A second build is a hit: no step runs, and the trace says so."""
    kernels.cpp(bekc.workdir / "a.cpp", fn="add_a")
    kernels.cpp(bekc.workdir / "b.cpp", fn="add_b")
    trace_file = tmp_path / "miss.json"
    bekc.build("a.cpp", "b.cpp", "--name", "pair", "-j", "2", FAST, "--trace", trace_file)
    trace = load(trace_file)
    assert process_names(trace) == {1: "pair"}
    ran = steps(trace)
    assert {e["cat"] for e in ran} <= STEP_KINDS
    compiles = [e for e in ran if e["cat"] == "compile"]
    assert len(compiles) == 3, compiles  # a.cpp, b.cpp, the entry points
    assert len([e for e in ran if e["cat"] == "link"]) == 1
    assert len([e for e in ran if e["cat"] == "write-wrapper"]) == 3
    for e in compiles:
        assert e["args"]["status"] == "ok" and e["args"]["kind"] == "compile"
        assert " -c " in f" {e['args']['command']} ", e
    assert max(e["tid"] for e in ran) <= 2
    assert_lanes_disjoint(trace)
    assert phases(trace) == PHASES
    span = build_span(trace)
    assert span["args"]["module"] == "pair" and span["args"]["cache"] == "miss", span
    for e in complete(trace):  # all within the build
        assert span["ts"] <= e["ts"] and e["ts"] + e["dur"] <= span["ts"] + span["dur"], e

    hit_file = tmp_path / "hit.json"
    bekc.build("a.cpp", "b.cpp", "--name", "pair", "-j", "2", FAST, "--trace", hit_file)
    hit = load(hit_file)
    assert steps(hit) == []
    assert phases(hit) == ["prepare", "plan", "look-up", "deliver"]
    assert build_span(hit)["args"]["cache"] == "hit"


def test_a_cuda_build_traces_nvccs_phases_and_the_step_caches_hits(bekc, nvcc, tmp_path):
    """nvcc's phases are steps of their own (cicc, ptxas, ...), each a step
    cache miss in a first build; a build for one more architecture takes what
    it can from the step cache, and the trace marks exactly the steps `-v`
    says were reused as hits, the new architecture's as misses."""
    (bekc.workdir / "scale.h").write_text("#define SCALE 2.0f\n")
    (bekc.workdir / "scale.cu").write_text(SCALE_PLAIN_CU)
    first_file, second_file = tmp_path / "first.json", tmp_path / "second.json"
    bekc.build("scale.cu", "--arch", "90", "-j", "2", "--trace", first_file)
    first = load(first_file)
    by_phase = {}
    for e in steps(first):
        by_phase.setdefault(e["args"].get("phase"), []).append(e)
    assert {"cicc", "ptxas", "cudafe++", "host-compile"} <= set(by_phase), by_phase.keys()
    assert by_phase["cicc"][0]["args"]["step_cache"] == "miss"
    assert_lanes_disjoint(first)

    second = bekc.run("build", "scale.cu", "--arch", "80,90", "-j", "2", "-v", "--cache-dir",
                      bekc.cache_dir, "--trace", second_file)
    assert second.returncode == 0, second.stderr
    reused = sorted(line[len("# reused: "):] for line in second.stderr.splitlines()
                    if line.startswith("# reused: "))
    trace = load(second_file)
    hits = sorted(e["name"] for e in steps(trace) if e["args"].get("step_cache") == "hit")
    assert reused and hits == reused, (hits, reused)
    misses = [e["name"] for e in steps(trace) if e["args"].get("step_cache") == "miss"]
    assert "cicc compute_80 scale.cu" in misses and "ptxas sm_80 scale.cu" in misses, misses
    assert_lanes_disjoint(trace)


def test_a_failed_build_still_writes_its_trace(bekc, kernels, tmp_path):
    """The compile that failed is in the trace with its exit status, the
    phase it failed in says so, and the build's outcome is the error."""
    (bekc.workdir / "bad.cpp").write_text(add_value_cpp("bad") + "\nint broken(\n")
    trace_file = tmp_path / "failed.json"
    failed = bekc.build("bad.cpp", FAST, "--trace", trace_file, ok=False)
    assert failed.rc == 1, failed.describe()
    trace = load(trace_file)
    compile_ = [e for e in steps(trace) if e["cat"] == "compile" and "bad" in e["name"]]
    assert compile_ and compile_[0]["args"]["status"] == "exited with code 1", steps(trace)
    execute = [e for e in complete(trace) if e["tid"] == 0 and e["name"] == "execute"]
    assert execute and execute[0]["args"]["failed"] is True
    span = build_span(trace)
    assert span["args"]["cache"] == "failed"
    assert "compilation failed" in span["args"]["error"], span
    assert not list(tmp_path.glob("failed.json?*")), "a temporary file was left beside it"


@pytest.mark.parametrize("where", ["directory", "missing directory", "FIFO"])
def test_a_trace_path_that_cannot_be_written_is_exit_2_before_the_build(bekc, kernels, tmp_path,
                                                                        where):
    kernels.cpp(bekc.workdir / "k.cpp")
    target = {"directory": tmp_path,
              "missing directory": tmp_path / "no" / "t.json",
              "FIFO": tmp_path / "fifo"}[where]
    if where == "FIFO":
        os.mkfifo(target)
    failed = bekc.build("k.cpp", FAST, "--trace", target, ok=False)
    assert failed.rc == 2, failed.describe()
    why = {"directory": "it is a directory; name a file in it",
           "missing directory": f"its directory {tmp_path / 'no'} does not exist",
           "FIFO": "is not a regular file (it is a FIFO)"}[where]
    first = failed.stderr.splitlines()[0]
    assert first.startswith(f"bekc: error: --trace {target}: ") and why in first, failed.stderr
    assert bekc.entries() == []  # nothing was built


def fake_package() -> dict:
    loads = "\n".join(f'    load_cpp_file(Path(__file__).parent / "k{i}.cpp", name="mod{i}")'
                      for i in range(3))
    files = {"_ops/__init__.py": "",
             "_ops/ops.py": "from pathlib import Path\nfrom bekc import load_cpp_file\n\n\n"
                            f"def load_all():\n{loads}\n"}
    for i in range(3):
        files[f"_ops/k{i}.cpp"] = add_value_cpp(f"plus_{i}", value=f"{i}.0f")
    return with_brainevent_headers(files)


def test_a_package_build_writes_one_trace_with_a_process_per_module(bekc, tmp_path):
    """The package's own process holds its modules' child builds in lanes;
    each module's trace is a process of its own, named as its lane's event,
    whose steps lie within that event: one clock for all. The private
    directory the children wrote their traces into is gone."""
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    site = make_site(tmp_path, fake_package())
    trace_file = tmp_path / "package.json"
    built = prebuild(bekc, site, "-j", "2", "--trace", trace_file)
    assert built.returncode == 0, built.stderr
    trace = load(trace_file)
    names = process_names(trace)
    assert names[1] == f"package {(site / 'brainevent').resolve()}", names
    modules = steps(trace, 1)
    assert sorted(e["args"]["module"] for e in modules) == ["mod0", "mod1", "mod2"]
    assert all(e["cat"] == "module" and e["args"]["cache"] == "miss" for e in modules), modules
    assert max(e["tid"] for e in modules) <= 2
    assert_lanes_disjoint(trace)
    by_name = {name: pid for pid, name in names.items()}
    assert len(names) == 4 and len(by_name) == 4, names
    for m in modules:
        pid = by_name[m["name"]]
        assert pid != 1
        inner = complete(trace, pid)
        assert [e for e in inner if e["cat"] == "compile"], inner
        assert build_span(trace, pid)["args"]["module"] == m["args"]["module"]
        # The child's times, moved onto the package's clock, lie within the
        # child process's own span in the package's lane (1 ms of slack for
        # the whole microseconds).
        for e in inner:
            assert m["ts"] - 1000 <= e["ts"] and e["ts"] + e["dur"] <= m["ts"] + m["dur"] + 1000, \
                (m, e)

    again = tmp_path / "again.json"
    assert prebuild(bekc, site, "-j", "2", "--trace", again).returncode == 0
    assert all(e["args"]["cache"] == "hit" for e in steps(load(again), 1))


def test_replay_traces_each_load_as_a_process(bekc, kernels, tmp_path):
    kernels.cpp(bekc.workdir / "k.cpp")
    record = tmp_path / "loads.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEKC")}
    recorded = bekc.build("k.cpp", FAST, "--name", "k", env={**env, "BEKC_RECORD": str(record)})
    assert recorded.rc == 0
    trace_file = tmp_path / "replay.json"
    replayed = bekc.run("replay", record, "--cache-dir", tmp_path / "other", "--trace", trace_file,
                        env=env)
    assert replayed.returncode == 0, replayed.stderr
    trace = load(trace_file)
    names = process_names(trace)
    (load_event,) = steps(trace, 1)
    assert load_event["args"]["module"] == "k" and load_event["args"]["cache"] == "miss"
    pid = {n: p for p, n in names.items()}[load_event["name"]]
    assert [e for e in complete(trace, pid) if e["cat"] == "compile"]
    # The recording does not carry --trace: a replay's builds record their
    # own lines, without it.
    assert "--trace" not in record.read_text()


def test_a_replay_into_a_new_cache_builds_its_biggest_load_first(bekc, kernels, tmp_path):
    """A replay into a cache that never built its loads starts the one with
    the biggest input first (a first build's guess at the longest), whatever
    order they were recorded in."""
    kernels.cpp(bekc.workdir / "small.cpp", fn="add_small")
    big = kernels.cpp(bekc.workdir / "big.cpp", fn="add_big")
    big.write_text(big.read_text() + "// " + "x" * 20000 + "\n")
    record = tmp_path / "loads.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEKC")}
    for src in ("small.cpp", "big.cpp"):
        assert bekc.build(src, FAST, env={**env, "BEKC_RECORD": str(record)}).rc == 0

    def started(cache, name):
        trace_file = tmp_path / name
        replayed = bekc.run("replay", record, "--cache-dir", cache, "-j", "1", "--trace",
                            trace_file, env=env)
        assert replayed.returncode == 0, replayed.stderr
        return [e["args"]["module"] for e in sorted(steps(load(trace_file), 1),
                                                    key=lambda e: e["ts"])]

    assert started(tmp_path / "fresh", "first.json") == ["big", "small"]


def run_script(name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "bench" / name), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_the_summary_and_the_timeline_read_a_builds_trace(bekc, kernels, tmp_path):
    """trace_summary.py prints the critical path (ending in the link; every
    step of it with --min-seconds 0) and the totals per kind of step; trace_svg.py draws every step as a box with its
    name as a tooltip, in an SVG that XML parsers read, whatever bytes the
    names hold."""
    kernels.cpp(bekc.workdir / "a b\u00e9.cpp", fn="add_a")
    kernels.cpp(bekc.workdir / "c.cpp", fn="add_c")
    trace_file = tmp_path / "t.json"
    bekc.build("a b\u00e9.cpp", "c.cpp", "--name", "k<&>", FAST, "--trace", trace_file)
    summary = run_script("trace_summary.py", trace_file, "--min-seconds", "0")
    assert summary.returncode == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert lines[0].startswith("k<&>: critical path "), summary.stdout
    path = lines[1:lines.index("")]
    assert "[link]" in path[-1], summary.stdout
    assert any(line.split()[:2] == ["compile", "3"] for line in lines), \
        summary.stdout

    svg_file = tmp_path / "t.svg"
    drawn = run_script("trace_svg.py", trace_file, "-o", svg_file)
    assert drawn.returncode == 0, drawn.stderr
    root = ET.parse(svg_file).getroot()
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    for e in steps(load(trace_file)):
        assert any(t.startswith(e["name"] + ": ") for t in titles), (e["name"], titles)
    assert run_script("trace_svg.py", tmp_path / "missing.json", "-o", svg_file).returncode == 2


def test_pack_traces_its_package_build_and_the_modules_in_it(bekc, tmp_path):
    """`bekc pack` runs one child per source: its lane holds the package's
    build, whose trace follows (the package's own process, named as that
    lane's event) with its modules' after it."""
    if jaxlib_package() is None:
        pytest.skip("jaxlib is not installed")
    site = make_site(tmp_path, fake_package())
    trace_file = tmp_path / "pack.json"
    made = bekc.run("pack", site / "brainevent", "-o", tmp_path / "out", "--arch", "sm_90",
                    "--cache-dir", bekc.cache_dir, "-j", "2", "--trace", trace_file)
    assert made.returncode == 0, made.stderr
    trace = load(trace_file)
    names = process_names(trace)
    (source,) = steps(trace, 1)
    assert names[1] == "pack out" and source["name"] == f"build {site / 'brainevent'}", names
    package = {n: p for p, n in names.items()}[source["name"]]
    modules = sorted(e["args"]["module"] for e in steps(trace, package))
    assert modules == ["mod0", "mod1", "mod2"] and len(names) == 5, names
    assert_lanes_disjoint(trace)
