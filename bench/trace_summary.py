#!/usr/bin/env python3
"""Where a build's time went, from its trace (`bekc build --trace FILE`).

Prints, for each process of the trace (a build, or a package build with one
process per module), its critical path: the chain of steps the build waited
on, found backwards from the step that ended last, each time through the step
that ended last before it started (steps run in waves, so that one is what the
next waited for, dependency or not). Gaps in the chain are the time no step
ran (bekc's own work: looking up, hashing, publishing). A package's chain is
of modules; the longest of them (--expand N, default 3) are expanded into
their own chains. Steps under --min-seconds (default 0.05) are counted, not
listed.

Then the totals per kind of step (cicc, ptxas, host-compile, link, ...:
`args.phase`, else the step's kind), with the steps the step cache answered,
and per phase of the build (prepare, plan, look-up, execute, publish,
deliver).

    python3 bench/trace_summary.py trace.json [--expand N] [--min-seconds S]

Pure Python, no dependencies; reads any Chrome trace event file whose
complete events ("ph": "X") carry ts and dur in microseconds.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from trace_events import kind_of, load_events, run_tool, short_name

# Events of a process's own thread (tid 0): the build and its phases.
BUILD_THREAD = 0


def complete_events(events: Sequence[dict]) -> List[dict]:
    return [e for e in events
            if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))
            and isinstance(e.get("dur"), (int, float))]


def process_names(events: Sequence[dict]) -> Dict[int, str]:
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e.get("pid")] = str(e.get("args", {}).get("name", ""))
    return names


def end(e: dict) -> float:
    return e["ts"] + e["dur"]


def critical_path(steps: Sequence[dict]) -> List[dict]:
    """The chain the steps waited on, first to last (see the module's doc)."""
    chain: List[dict] = []
    taken: set = set()
    limit = float("inf")
    while True:
        before = [e for e in steps if id(e) not in taken and end(e) <= limit]
        if not before:
            break
        last = max(before, key=end)
        chain.append(last)
        taken.add(id(last))
        limit = last["ts"]
    chain.reverse()
    return chain


def seconds(us: float) -> str:
    return f"{us / 1e6:8.2f} s"


@dataclass
class Chains:
    """What print_chain reads: the events of each process, the processes'
    names, and how much to print."""
    by_pid: Dict[int, List[dict]]
    names: Dict[int, str]
    expand: int = 3          # the longest modules of a package's path, expanded
    min_us: float = 50000    # shorter steps are counted, not listed
    seen: set = field(default_factory=set)


def print_chain(c: Chains, pid: int, indent: str, out) -> None:
    c.seen.add(pid)
    chain = critical_path([e for e in c.by_pid.get(pid, []) if e.get("tid") != BUILD_THREAD])
    name = c.names.get(pid, f"process {pid}")
    if not chain:
        print(f"{indent}{name}: no step ran", file=out)
        return
    wall = end(chain[-1]) - chain[0]["ts"]
    print(f"{indent}{name}: critical path {sum(e['dur'] for e in chain) / 1e6:.2f} s of "
          f"steps in {wall / 1e6:.2f} s", file=out)
    pid_of = {n: p for p, n in c.names.items()}
    # The modules of a package's path worth expanding: the longest.
    longest = sorted((e for e in chain if pid_of.get(e.get("name")) not in (None, pid)),
                     key=lambda e: -e["dur"])[:c.expand]
    short = [e for e in chain if e["dur"] < c.min_us]
    previous_end = None
    for e in chain:
        if previous_end is not None and e["ts"] - previous_end >= c.min_us:
            print(f"{indent}  {seconds(e['ts'] - previous_end)}  (no step running)", file=out)
        previous_end = end(e)
        if e["dur"] < c.min_us:
            continue
        args = e.get("args") or {}
        cache = args.get("step_cache") or args.get("cache")
        note = f" [{kind_of(e)}{', ' + cache if cache else ''}]"
        print(f"{indent}  {seconds(e['dur'])}  {short_name(e.get('name', ''))}{note}", file=out)
        child = pid_of.get(e.get("name"))
        if any(e is m for m in longest) and child not in c.seen:
            print_chain(c, child, indent + "    ", out)
    if short:
        print(f"{indent}  {seconds(sum(e['dur'] for e in short))}  ({len(short)} steps under "
              f"{c.min_us / 1e6:g} s each)", file=out)


def print_totals(events: Sequence[dict], out) -> None:
    kinds: Dict[str, List[float]] = defaultdict(lambda: [0, 0.0, 0])
    phases: Dict[str, List[float]] = defaultdict(lambda: [0, 0.0])
    for e in events:
        args = e.get("args") or {}
        if e.get("tid") == BUILD_THREAD:
            if e.get("cat") == "phase":
                phases[e.get("name", "?")][0] += 1
                phases[e.get("name", "?")][1] += e["dur"]
            continue
        if e.get("cat") == "module":
            continue  # a child build: its own steps are counted
        k = kinds[kind_of(e)]
        k[0] += 1
        k[1] += e["dur"]
        k[2] += 1 if args.get("step_cache") == "hit" else 0
    print("\nper kind of step:        count   cache hits        total", file=out)
    for name, (count, total, hits) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name:<22} {count:6d} {hits:12d}   {seconds(total)}", file=out)
    if phases:
        print("\nper phase of the builds: count        total", file=out)
        for name, (count, total) in sorted(phases.items(), key=lambda kv: -kv[1][1]):
            print(f"  {name:<22} {count:6d}   {seconds(total)}", file=out)


def summarize(path: str, out=sys.stdout, expand: int = 3, min_seconds: float = 0.05) -> None:
    events = load_events(path)
    names = process_names(events)
    complete = complete_events(events)
    by_pid: Dict[int, List[dict]] = defaultdict(list)
    for e in complete:
        by_pid[e.get("pid")].append(e)
    # The top process first (the package's, whose modules are the others).
    pids = sorted(by_pid, key=lambda p: (p is None, p if isinstance(p, int) else 0))
    if pids:
        print_chain(Chains(by_pid, names, expand, min_seconds * 1e6), pids[0], "", out)
    print_totals(complete, out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--expand", type=int, default=3,
                        help="expand the N longest modules of a package's path (default 3)")
    parser.add_argument("--min-seconds", type=float, default=0.05,
                        help="list the steps of the path that take at least this long; count "
                             "the others (default 0.05)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run_tool("trace_summary.py", __doc__,
                    lambda args: summarize(args.trace, sys.stdout, args.expand, args.min_seconds),
                    add_arguments, argv)


if __name__ == "__main__":
    sys.exit(main())
