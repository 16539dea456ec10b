"""What bench/trace_summary.py and bench/trace_svg.py share: reading a trace
that `bekc build --trace FILE` wrote (the Chrome trace event format) and
their command line. Pure Python, no dependencies."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, List, Optional, Sequence


def load_events(path: str) -> List[dict]:
    """The events of the trace at `path`: an object with "traceEvents", or a
    bare list of events (the format allows both)."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        data = json.load(f)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ValueError(f"{path}: not a trace: no list of events")
    return [e for e in events if isinstance(e, dict)]


def kind_of(e: dict) -> str:
    """A step's kind: nvcc's phase (cicc, ptxas, ...), else the step's kind
    (compile, link, ...), else the event's category."""
    args = e.get("args") or {}
    return str(args.get("phase") or args.get("kind") or e.get("cat") or "?")


def short_name(name: str) -> str:
    """A step's name with each path shortened to its file name: "cicc
    compute_90 /site/brainevent/_csr/csrmv.cu" is "cicc compute_90 csrmv.cu"."""
    return " ".join(w.rsplit("/", 1)[-1] if "/" in w else w for w in str(name).split(" "))


def run_tool(name: str, doc: str, act: Callable[[argparse.Namespace], None],
             add_arguments: Callable[[argparse.ArgumentParser], None] = lambda p: None,
             argv: Optional[Sequence[str]] = None) -> int:
    """`name`'s command line: TRACE and what `add_arguments` adds, then
    act(args); a trace that cannot be read is exit 2."""
    parser = argparse.ArgumentParser(prog=name, description=doc.split("\n\n")[0])
    parser.add_argument("trace", help="a file `bekc build --trace FILE` wrote")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        act(args)
    except (OSError, ValueError) as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 2
    return 0
